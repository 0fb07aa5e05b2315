package sockwait

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotSocket is matched by a *NotSocketError.
var ErrNotSocket = errors.New("not a socket")

// NotSocketError is a Unix dial refused because something other than a
// socket is at the path: a wrong --socket, not a receiver that is down.
type NotSocketError struct {
	Path string
	Kind string // "regular file", "directory", "FIFO", "device"
	Err  error  // the dial's error (connection refused)
}

// Error implements error.
func (e *NotSocketError) Error() string {
	return fmt.Sprintf("not a socket: %s at %s (%v); give --socket the path the receiver listens on, or remove what is there",
		e.Kind, e.Path, e.Err)
}

// Unwrap returns ErrNotSocket and the dial's error.
func (e *NotSocketError) Unwrap() []error { return []error{ErrNotSocket, e.Err} }

// ExplainDial returns err, the error of a dial to path on network, as a
// *NotSocketError when it is a Unix dial refused at a path that exists and
// is not a socket (Linux refuses both alike); any other error as it is.
func ExplainDial(network, path string, err error) error {
	if network != "unix" || !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	fi, serr := os.Stat(path)
	if serr != nil || fi.Mode().Type() == fs.ModeSocket {
		return err
	}
	kind := "device"
	switch fi.Mode().Type() {
	case 0:
		kind = "regular file"
	case fs.ModeDir:
		kind = "directory"
	case fs.ModeNamedPipe:
		kind = "FIFO"
	}
	return &NotSocketError{Path: path, Kind: kind, Err: err}
}
