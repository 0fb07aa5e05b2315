//go:build !linux

package emitter

import (
	"net"
	"syscall"
)

// rawSocket reports false: the send buffer's room is only known on Linux.
func rawSocket(net.Conn) (syscall.RawConn, bool) { return nil, false }

func sendMem(syscall.RawConn) (int, int, error) { return 0, 0, nil }

func raiseSndbuf(syscall.RawConn, int) {}
