//go:build linux

package refrecv_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/internal/refrecv"
)

// The pre-fork receiver's master listens and its worker reads: SO_PEERCRED
// names the master, and a worker killed with lines unread loses them while
// the master lives on and starts a new worker on the same listener.
func TestPreForkWorkerKilledWithLinesUnread(t *testing.T) {
	sock := sockPath(t)
	cfg := refrecv.PreForkConfig{Addr: sock, Out: filepath.Join(filepath.Dir(sock), "handled"), PerLine: 5 * time.Millisecond}
	p, err := refrecv.StartPreFork(cfg)
	require.NoError(t, err)
	defer p.Kill()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	rc, err := c.(*net.UnixConn).SyscallConn()
	require.NoError(t, err)
	var cred *unix.Ucred
	require.NoError(t, rc.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }))
	require.NoError(t, err)
	assert.EqualValues(t, p.Master(), cred.Pid, "SO_PEERCRED names the listener")
	workers := p.Workers()
	require.Len(t, workers, 1)
	assert.NotEqual(t, p.Master(), workers[0], "the reader is another process")

	var sent strings.Builder
	for i := range 400 {
		fmt.Fprintf(&sent, "line %04d\n", i)
	}
	_, err = c.Write([]byte(sent.String()))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(p.Lines()) >= 10 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.KillWorker())
	lost := 400 - len(p.Lines())
	assert.Positive(t, lost, "the worker died with lines unread")
	require.Len(t, p.Workers(), 2, "the master started another worker")

	c2, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c2.Close()
	before := len(p.Lines())
	_, err = c2.Write([]byte("after the worker's death\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(p.Lines()) == before+1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "after the worker's death", p.Lines()[before])
	t.Logf("worker killed with %d of 400 lines unhandled; the next worker reads new connections", lost)
}
