//go:build linux

package emitter

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Indexes into SO_MEMINFO's array (linux/sock_diag.h).
const (
	memWmemAlloc  = 2 // Unix sockets charge their queued buffers here
	memSndbuf     = 3
	memWmemQueued = 5 // TCP charges its send queue here
	memVars       = 9
)

// rawSocket returns the raw connection of a Unix or TCP stream socket.
func rawSocket(c net.Conn) (syscall.RawConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	switch c.(type) {
	case *net.UnixConn, *net.TCPConn:
	default:
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}

// sendMem returns the send buffer's size and the memory its queue holds.
func sendMem(rc syscall.RawConn) (sndbuf, queued int, err error) {
	var mem [memVars]uint32
	cerr := rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(mem))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			err = errno
		}
	})
	if cerr != nil {
		return 0, 0, cerr
	}
	return int(mem[memSndbuf]), int(max(mem[memWmemAlloc], mem[memWmemQueued])), err
}

// raiseSndbuf asks for a send buffer of at least n bytes (the kernel caps it
// at net.core.wmem_max, doubled).
func raiseSndbuf(rc syscall.RawConn, n int) {
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, n)
	})
}
