package sockwait

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by every query on a [Waiter] whose connection is
// not a Linux Unix stream or TCP socket. The caller cannot learn whether the
// peer read its data and must fall back to acknowledging on write.
var ErrUnsupported = errors.New("sockwait: consumption tracking not supported for this connection")

// ErrPeerGone means the peer hung up. Bytes written before may not have been
// read, so the caller must resend them on a new connection.
var ErrPeerGone = errors.New("sockwait: peer hung up")

// PeerGoneError is the error [Waiter.WaitConsumed] returns when the peer hung
// up. It matches [ErrPeerGone] with errors.Is, and also Cause.
type PeerGoneError struct {
	// Unread is what SIOCOUTQ reported just before the hang-up was seen.
	// On a Unix socket it is usually 0, because closing the peer frees its
	// unread buffers; on TCP after a reset it is the bytes never
	// acknowledged, and it stays there.
	Unread int
	// Cause is the socket's pending error when poll reported POLLERR:
	// ECONNRESET when a Unix peer closed with data still unread in its
	// receive queue, or when a TCP peer reset the connection. Otherwise it is
	// io.EOF: the peer closed or shut down writing without an error. On a Unix
	// socket that suggests the peer had read everything, but the pending
	// error is cleared by anyone who reads it (a read on the connection
	// included), so treat it as a hint for logs, never as an acknowledgement.
	Cause error
}

// Error implements error.
func (e *PeerGoneError) Error() string {
	return fmt.Sprintf("sockwait: peer hung up (%v, %d bytes still queued); resend what was not acknowledged", e.Cause, e.Unread)
}

// Unwrap returns ErrPeerGone and the cause, so errors.Is matches both.
func (e *PeerGoneError) Unwrap() []error {
	return []error{ErrPeerGone, e.Cause}
}
