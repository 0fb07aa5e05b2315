//go:build linux

package sockwait

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollRDHUP is POLLRDHUP from asm-generic/poll.h, which x/sys/unix does not
// export for Linux. The value is 0x2000 on every architecture Go supports.
const pollRDHUP = 0x2000

// hangupEvents mean the peer is gone. POLLRDHUP is not one: a peer that
// will send nothing more may still read.
const hangupEvents = unix.POLLHUP | unix.POLLERR

// rawStream returns the raw connection of c if c is a Unix stream or TCP
// socket.
func rawStream(c net.Conn) (syscall.RawConn, bool) {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.UnixConn:
		sc = c
	case *net.TCPConn:
		sc = c
	default:
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	typ := -1
	err = rc.Control(func(fd uintptr) {
		typ, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	})
	return rc, err == nil && typ == unix.SOCK_STREAM
}

// outq returns SIOCOUTQ for fd.
func outq(fd uintptr) (int, error) {
	n, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
	if err != nil {
		return 0, fmt.Errorf("sockwait: ioctl SIOCOUTQ: %w", err)
	}
	return n, nil
}

// hungUp polls fd for a hang-up without waiting; poll consumes nothing.
func hungUp(fd uintptr) (bool, error) {
	rev, err := pollNow(fd, hangupEvents)
	return rev&(hangupEvents|unix.POLLNVAL) != 0, err
}

// closedWrite polls fd for POLLRDHUP without waiting: the peer will send
// nothing more.
func closedWrite(fd uintptr) (bool, error) {
	rev, err := pollNow(fd, pollRDHUP)
	return rev&(pollRDHUP|unix.POLLHUP|unix.POLLNVAL) != 0, err
}

// pollNow polls fd for events without waiting, retrying on EINTR, and
// returns the events reported.
func pollNow(fd uintptr, events int16) (int16, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		_, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("sockwait: poll: %w", err)
		}
		return fds[0].Revents, nil
	}
}

// pendingError returns the socket's pending error, or io.EOF if there is
// none. Reading SO_ERROR clears it; the connection is dead by then anyway.
func pendingError(fd uintptr) error {
	errno, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil || errno == 0 {
		return io.EOF
	}
	return syscall.Errno(errno)
}

// readable reports whether a read on fd would not block. It polls rather
// than recv (even with MSG_PEEK), which would clear a pending ECONNRESET.
func readable(fd uintptr) bool {
	rev, err := pollNow(fd, unix.POLLIN|pollRDHUP)
	return err != nil || rev != 0
}

// Indexes into SO_MEMINFO's array (linux/sock_diag.h).
const (
	memWmemAlloc  = 2 // Unix sockets charge their queued buffers here
	memSndbuf     = 3
	memWmemQueued = 5 // TCP charges its send queue here
	memVars       = 9
)

// sendMem returns the send buffer's size and the memory its queue holds.
func sendMem(fd uintptr) (sndbuf, queued int, err error) {
	var mem [memVars]uint32
	size := uint32(unsafe.Sizeof(mem))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return 0, 0, errno
	}
	return int(mem[memSndbuf]), int(max(mem[memWmemAlloc], mem[memWmemQueued])), nil
}

// raiseSndbuf asks for a send buffer of at least n bytes (the kernel caps it
// at net.core.wmem_max, doubled).
func raiseSndbuf(fd uintptr, n int) error {
	return unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}
