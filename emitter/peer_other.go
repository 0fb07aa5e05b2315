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

func identify(net.Conn) (peerIdent, bool, bool) { return peerIdent{}, false, false }
func (peerIdent) alive() bool                   { return false }
func unixSocketGone(uint64) (bool, error)       { return false, errNoSocket }

var errNoSocket = errors.New("emitter: no such socket")
