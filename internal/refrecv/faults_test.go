package refrecv_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/sockwait"
)

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("event %d", i)
	}
	return out
}

func unread(t *testing.T, w *sockwait.Waiter) int {
	t.Helper()
	n, err := w.Unread()
	require.NoError(t, err)
	return n
}

// probeGone returns the hang-up Probe sees (nil while the peer is there),
// failing the test on error.
func probeGone(t *testing.T, w *sockwait.Waiter) error {
	t.Helper()
	_, gone, err := w.Probe()
	require.NoError(t, err)
	if gone == nil {
		return nil
	}
	return gone
}

func TestPauseReadingLeavesDataInSocket(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := start(t, network, nil)
			c := dial(t, r)
			send(t, c, "before")
			waitCount(t, r, 1) // the reader is now blocked in Read

			r.PauseReading()
			w := sockwait.New(c)
			if network == "unix" {
				send(t, c, numbered(100)...)
				assert.Positive(t, unread(t, w), "the data waits in the socket")
			} else {
				// TCP acknowledges on receipt: fill the window instead.
				go func() { _, _ = c.Write(make([]byte, 16<<20)) }()
				require.Eventually(t, func() bool { return unread(t, w) > 0 }, 10*time.Second, time.Millisecond)
			}
			assert.Equal(t, 1, r.Count())

			r.ResumeReading()
			if network == "unix" {
				waitCount(t, r, 101)
				require.Eventually(t, func() bool { return unread(t, w) == 0 }, 10*time.Second, time.Millisecond)
				require.NoError(t, probeGone(t, w), "read, not gone")
			}
		})
	}
}

func TestPauseAppliesToNewConnections(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	r.PauseReading()
	c := dial(t, r)
	send(t, c, "held")
	assert.Positive(t, unread(t, sockwait.New(c)))
	assert.Zero(t, r.Count())
	r.ResumeReading()
	waitCount(t, r, 1)
}

func TestNeverRead(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", &refrecv.Options{NeverRead: true})
	c := dial(t, r)
	waitConns(t, r, 1)
	send(t, c, numbered(10)...)
	w := sockwait.New(c)
	assert.Positive(t, unread(t, w))
	assert.Equal(t, 1, r.Conns())

	require.NoError(t, r.Close())
	err := probeGone(t, w)
	require.ErrorIs(t, err, sockwait.ErrPeerGone)
	assert.ErrorIs(t, err, syscall.ECONNRESET, "closed with data unread")
	assert.Zero(t, r.Count())
}

func TestCloseDrainsWhatWasSent(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := start(t, network, nil)
			c := dial(t, r)
			waitConns(t, r, 1)
			r.PauseReading()
			send(t, c, numbered(200)...)

			require.NoError(t, r.Close())
			assert.Equal(t, 200, r.Count(), "Close reads what was already sent, paused or not")
			assert.Equal(t, numbered(200), r.Lines())
			assert.Zero(t, r.Conns())
			require.NoError(t, r.Close(), "second Close")
			require.NoError(t, r.Kill(), "Kill after Close")
		})
	}
}

func TestCloseUnixPeerView(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	c := dial(t, r)
	waitConns(t, r, 1)
	r.PauseReading()
	send(t, c, numbered(200)...)
	w := sockwait.New(c)
	require.Positive(t, unread(t, w))

	require.NoError(t, r.Close())
	_, err := os.Stat(r.Addr())
	assert.ErrorIs(t, err, os.ErrNotExist, "Close removes the socket file")
	err = probeGone(t, w)
	require.ErrorIs(t, err, sockwait.ErrPeerGone)
	assert.NotErrorIs(t, err, syscall.ECONNRESET, "nothing was left unread")
	_, err = c.Write([]byte("late\n"))
	assert.ErrorIs(t, err, syscall.EPIPE)
	_, err = net.Dial("unix", r.Addr())
	assert.Equal(t, "no_such_socket", sockwait.Classify(err))
}

func TestCloseWhilePacedIsPrompt(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", &refrecv.Options{Rate: 1})
	send(t, dial(t, r), numbered(50)...)
	waitCount(t, r, 1)
	require.NoError(t, r.Close())
	assert.Equal(t, 50, r.Count())
}

func TestKillLosesUnreadData(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	c := dial(t, r)
	send(t, c, "read")
	waitCount(t, r, 1)
	r.PauseReading()
	send(t, c, numbered(100)...)

	require.NoError(t, r.Kill())
	assert.Equal(t, 1, r.Count(), "what was still in the socket is lost")
	err := probeGone(t, sockwait.New(c))
	require.ErrorIs(t, err, sockwait.ErrPeerGone)
	assert.ErrorIs(t, err, syscall.ECONNRESET)

	_, err = os.Stat(r.Addr())
	require.NoError(t, err, "a killed receiver leaves its socket file, like a crash")
	_, err = net.Dial("unix", r.Addr())
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, "connection_refused", sockwait.Classify(err))

	require.NoError(t, r.Restart(), "Restart removes the stale file")
	send(t, dial(t, r), "again")
	waitCount(t, r, 2)
	assert.Equal(t, []string{"read", "again"}, r.Lines())
	assert.Equal(t, 2, r.Received()[1].Conn)
}

func TestKillTCPResets(t *testing.T) {
	t.Parallel()
	r := start(t, "tcp", nil)
	c := dial(t, r)
	send(t, c, "hello")
	waitCount(t, r, 1)
	addr := r.Addr()

	require.NoError(t, r.Kill())
	_, err := c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, syscall.ECONNRESET)

	require.NoError(t, r.Restart())
	assert.Equal(t, addr, r.Addr(), "same port after restart")
	send(t, dial(t, r), "back")
	waitCount(t, r, 2)
}

func TestRestartErrors(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	require.ErrorIs(t, r.Restart(), refrecv.ErrRunning)

	_, err := refrecv.Start("unix", r.Addr(), nil)
	require.ErrorIs(t, err, refrecv.ErrAddrInUse, "a live listener is not stale")

	file := sockPath(t)
	require.NoError(t, os.WriteFile(file, []byte("data"), 0o600))
	_, err = refrecv.Start("unix", file, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a socket")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "data", string(data), "a regular file is never removed")

	_, err = refrecv.Start("tcp", "127.0.0.1:notaport", nil)
	require.Error(t, err)
	assert.False(t, errors.Is(err, refrecv.ErrRunning))
}
