package sockwait

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by every query on a [Waiter] whose connection
// is not a Linux Unix stream or TCP socket: the caller must acknowledge on
// write instead.
var ErrUnsupported = errors.New("sockwait: consumption tracking not supported for this connection")

// ErrPeerGone means the peer hung up; what was written may not have been
// read, so the caller resends it on a new connection.
var ErrPeerGone = errors.New("sockwait: peer hung up")

// PeerGoneError is a hang-up seen by [Waiter.Probe]. It matches
// [ErrPeerGone] and its Cause with errors.Is.
type PeerGoneError struct {
	// Unread is the SIOCOUTQ count seen just before the hang-up: usually 0
	// on a Unix socket (a close frees the peer's buffers), the bytes never
	// acknowledged on TCP after a reset.
	Unread int
	// Cause is the socket's pending error: ECONNRESET when a Unix peer
	// closed with data unread or a TCP peer reset, else io.EOF. Anyone who
	// reads the connection clears it, so it is a hint for logs, never an
	// acknowledgement.
	Cause error
}

// Error implements error.
func (e *PeerGoneError) Error() string {
	return fmt.Sprintf("sockwait: peer hung up (%v, %d bytes still queued); resend what was not acknowledged", e.Cause, e.Unread)
}

// Unwrap returns ErrPeerGone and the cause.
func (e *PeerGoneError) Unwrap() []error {
	return []error{ErrPeerGone, e.Cause}
}
