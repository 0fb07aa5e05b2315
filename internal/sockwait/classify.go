package sockwait

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Error classes returned by Classify, stable enough for metric labels.
const (
	ClassBrokenPipe        = "broken_pipe"
	ClassConnectionRefused = "connection_refused"
	ClassNotSocket         = "not_a_socket"
	ClassNoSuchSocket      = "no_such_socket"
	ClassTimeout           = "timeout"
	ClassPermission        = "permission"
	ClassConnectionReset   = "connection_reset"
	ClassClosed            = "closed"
	ClassOther             = "other"
)

// Classify names the kind of a connection error for logs and metric labels:
// one of the Class constants, or "" for a nil error. It looks through wrapped
// errors, so a *PeerGoneError is classed by its cause (connection_reset when
// the peer closed with data unread, closed otherwise).
func Classify(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EPIPE):
		return ClassBrokenPipe
	case errors.Is(err, ErrNotSocket):
		return ClassNotSocket
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassConnectionRefused
	case errors.Is(err, syscall.ENOENT):
		return ClassNoSuchSocket
	case errors.Is(err, syscall.ECONNRESET):
		return ClassConnectionReset
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return ClassPermission
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrPeerGone):
		return ClassClosed
	}
	return ClassOther
}
