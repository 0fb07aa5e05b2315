package refrecv_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// A line over 64 KiB fails the CEP child's scanner: like cloud-event-proxy,
// it stops reading that connection without closing it, and the connection
// is closed at the next garbage collection while the process stays up and
// reads its other connections.
func TestCEPClosesFailedConnectionAtGC(t *testing.T) {
	dir, err := os.MkdirTemp("", "cep")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cfg := refrecv.CEPConfig{Addr: filepath.Join(dir, "s.sock"), Out: filepath.Join(dir, "handled"),
		GCInterval: 200 * time.Millisecond}
	rcv, err := refrecv.StartCEP(cfg)
	require.NoError(t, err)
	t.Cleanup(rcv.Kill)

	bad, err := net.Dial("unix", cfg.Addr)
	require.NoError(t, err)
	defer bad.Close()
	_, err = bad.Write([]byte("before\n" + strings.Repeat("x", 70000) + "\nafter\n"))
	require.NoError(t, err)
	require.NoError(t, bad.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = bad.Read(make([]byte, 1))
	require.Error(t, err)
	assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "closed by the child, not timed out: %v", err)

	good, err := net.Dial("unix", cfg.Addr)
	require.NoError(t, err)
	defer good.Close()
	_, err = good.Write([]byte("other\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rcv.Lines()) == 2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"before", "other"}, rcv.Lines(), "the long line and what follows it are never handled")
	assert.Equal(t, 1, rcv.Starts(), "the process stayed up")
	select {
	case <-rcv.Exited():
		t.Fatal("the child exited")
	default:
	}
}
