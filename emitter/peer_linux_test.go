//go:build linux

package emitter

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdentifyPeer(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); accepted <- c }()
	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s := <-accepted
	id, ok := identify(c)
	require.True(t, ok)
	assert.EqualValues(t, os.Getpid(), id.pid)
	assert.True(t, id.alive())
	gone, err := unixSocketGone(id.ino)
	require.NoError(t, err)
	assert.False(t, gone, "the receiver's end is open")
	require.NoError(t, s.Close())
	gone, err = unixSocketGone(id.ino)
	require.NoError(t, err)
	assert.True(t, gone, "closed")
	assert.False(t, peerIdent{pid: id.pid, start: id.start + 1, stack: id.stack}.alive(), "another process")
}
