package refrecv_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/evspool/evspool/internal/refrecv"
)

func TestMain(m *testing.M) {
	refrecv.MaybeRunPreFork() // the pre-fork receiver's master and workers
	refrecv.MaybeRunCEP()
	goleak.VerifyTestMain(m)
}

// sockPath returns a Unix socket path short enough for the 108-byte limit,
// which t.TempDir's long names can exceed.
func sockPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tr")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "r.sock")
}

func start(t *testing.T, network string, opts *refrecv.Options) *refrecv.Receiver {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = sockPath(t)
	}
	r, err := refrecv.Start(network, addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Kill() })
	return r
}

func dial(t *testing.T, r *refrecv.Receiver) net.Conn {
	t.Helper()
	c, err := net.Dial(r.Network(), r.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, lines ...string) {
	t.Helper()
	w := bufio.NewWriter(c)
	for _, l := range lines {
		_, err := w.WriteString(l + "\n")
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
}

func waitCount(t *testing.T, r *refrecv.Receiver, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.WaitCount(ctx, n))
}

// waitConns waits until the receiver has accepted n connections, so that
// PauseReading and friends apply to them.
func waitConns(t *testing.T, r *refrecv.Receiver, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.Accepted() >= n }, 10*time.Second, time.Millisecond)
}
