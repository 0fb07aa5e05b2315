//go:build !linux

package sockwait

import (
	"net"
	"syscall"
)

// rawStream reports false: only Linux exposes what the peer has read.
func rawStream(net.Conn) (syscall.RawConn, bool) { return nil, false }

func outq(uintptr) (int, error) { return 0, ErrUnsupported }

func hungUp(uintptr) (bool, error) { return false, ErrUnsupported }

func closedWrite(uintptr) (bool, error) { return false, ErrUnsupported }

func pendingError(uintptr) error { return ErrUnsupported }

func readable(uintptr) bool { return true }

func sendMem(uintptr) (int, int, error) { return 0, 0, ErrUnsupported }

func raiseSndbuf(uintptr, int) error { return ErrUnsupported }
