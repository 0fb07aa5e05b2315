package refrecv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// listen listens on addr. For a Unix path that is taken, it removes the file
// if it is a socket nobody accepts on (left by a crash or a Kill) and tries
// again, as cloud-event-proxy does.
func listen(network, addr string) (net.Listener, error) {
	ln, err := net.Listen(network, addr)
	if err == nil || network != "unix" || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, wrapListen(network, addr, err)
	}
	if err := removeStale(addr); err != nil {
		return nil, err
	}
	ln, err = net.Listen(network, addr)
	return ln, wrapListen(network, addr, err)
}

func wrapListen(network, addr string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("refrecv: listen on %s %s: %w", network, addr, err)
}

// staleGrace is how long a socket path may go on answering after its
// listener closed before it is taken for a live one.
const staleGrace = 2 * time.Second

// removeStale removes path if it is a socket that refuses connections.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("refrecv: listen on unix %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("refrecv: listen on unix %s: the path exists and is not a socket; remove it", path)
	}
	// A listener just closed can still answer for a moment: a process
	// forked meanwhile holds a copy of its descriptor until it execs (the
	// test process starts evspool children in parallel). Live means it
	// still answers after staleGrace.
	for deadline := time.Now().Add(staleGrace); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("refrecv: listen on unix %s: %w", path, ErrAddrInUse)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("refrecv: remove stale socket %s: %w", path, err)
	}
	return nil
}
