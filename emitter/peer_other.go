//go:build !linux

package emitter

import (
	"errors"
	"net"
)

type peerIdent struct {
	pid   int32
	start uint64
	stack uint64
	ino   uint64
}

func peerEnd(net.Conn) (uint64, bool)     { return 0, false }
func readerOf(uint64) (peerIdent, string) { return peerIdent{}, "not Linux" }
func (peerIdent) alive() bool             { return false }
func unixSocketGone(uint64) (bool, error) { return false, errNoSocket }

var errNoSocket = errors.New("emitter: no such socket")
