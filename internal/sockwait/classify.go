package sockwait

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Classify names the kind of a connection error for logs and metric labels:
// broken_pipe, not_a_socket, connection_refused, no_such_socket,
// connection_reset, permission, timeout, closed or other; "" for nil. A
// *PeerGoneError is classed by its cause.
func Classify(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EPIPE):
		return "broken_pipe"
	case errors.Is(err, ErrNotSocket):
		return "not_a_socket"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ENOENT):
		return "no_such_socket"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrPeerGone):
		return "closed"
	}
	return "other"
}
