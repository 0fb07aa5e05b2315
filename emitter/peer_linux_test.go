//go:build linux

package emitter

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestIdentifyPeer(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, ok, retry := identify(c)
	assert.False(t, ok, "not accepted yet: the receiver's end has no inode")
	assert.True(t, retry, "that passes: ask again")
	s, err := ln.Accept()
	require.NoError(t, err)
	id, ok, _ := identify(c)
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

// An evspool killed after its first write on a connection must leave a note
// naming that connection's receiver, or the next start neither waits for
// the receiver to finish the old connection nor knows what it handled, and
// its resend interleaves with the old connection's last lines (out of
// order: TestPrecisionEvspoolKills, about 1 run in 6). So the receiver is
// identified and noted before anything is written: when its first byte
// arrives, the note is there. The receiver here accepts 300 ms late, as a
// loaded one did; before, the event was written at once, into a
// connection not yet accepted, and noted only at a later write or idle
// check.
func TestReceiverNotedBeforeTheFirstWrite(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	spool := filepath.Join(dir, "spool")
	em, err := Open(sock, spool, &Options{NoSync: true, Stdout: io.Discard})
	require.NoError(t, err)
	defer em.Close(context.Background())
	require.NoError(t, em.Emit(context.Background(), []byte("first event")))

	time.Sleep(300 * time.Millisecond) // a receiver slow to accept
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first event\n", line)

	m, err := wal.ReadPeerMark(spool)
	require.NoError(t, err, "no note of the receiver when its first byte arrived")
	assert.EqualValues(t, os.Getpid(), m.Pid)
	var st syscall.Stat_t
	f, err := c.(*net.UnixConn).File()
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
	assert.Equal(t, st.Ino, m.Ino, "this connection's receiver end")
}
