package torture

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The chaos loop needs a receiver process it can SIGKILL without that kill
// itself losing lines: a receiver that reads a chunk, then dies before
// recording it, has consumed lines that evspool rightly acknowledged. This
// one peeks (MSG_PEEK), appends the complete lines to its file, and only then
// consumes exactly those bytes, so a kill at any moment leaves every consumed
// line recorded (a line recorded but not consumed is resent: a duplicate).
// Connections are served one at a time, in accept order, each until EOF, so
// the file's order is the order evspool sent.

const receiverEnv = "EVSPOOL_TORTURE_RECEIVER"

// runReceiver is the receiver child's main: os.Args carry socket and file.
func runReceiver(sock, out string) error {
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if err := serve(c.(*net.UnixConn), f); err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
		}
		c.Close()
	}
}

func serve(c *net.UnixConn, f *os.File) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	for {
		var n int
		var rerr error
		// Blocking peek: the fd is non-blocking, so wait through Read's poller.
		err := raw.Read(func(fd uintptr) bool {
			n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			return !errors.Is(rerr, syscall.EAGAIN)
		})
		if err != nil || rerr != nil {
			return errors.Join(err, rerr)
		}
		if n == 0 {
			return nil // EOF
		}
		k := bytes.LastIndexByte(buf[:n], '\n') + 1
		if k == 0 {
			// A partial line: the rest is on its way, or the sender died in
			// the middle of a write and the fragment is garbage (the whole
			// line will be resent). Never record it.
			if gone, err := hungUp(raw); err != nil || gone {
				c.Read(buf[:n])
				return err
			}
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if _, err := f.Write(buf[:k]); err != nil {
			return err
		}
		if _, err := c.Read(buf[:k]); err != nil {
			return err
		}
	}
}

func hungUp(raw syscall.RawConn) (bool, error) {
	var gone bool
	var perr error
	err := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		_, perr = unix.Poll(fds, 0)
		gone = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return gone, errors.Join(err, perr)
}
