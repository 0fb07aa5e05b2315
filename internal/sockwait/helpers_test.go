package sockwait_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/evspool/evspool/internal/sockwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// unixPair returns the dialing and the accepted end of a Unix stream
// connection. The directory is short because socket paths are limited to
// 108 bytes and t.TempDir embeds the test name.
func unixPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sw")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return pair(t, "unix", filepath.Join(dir, "s.sock"))
}

// tcpPair is unixPair over 127.0.0.1.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	return pair(t, "tcp", "127.0.0.1:0")
}

func pair(t *testing.T, network, addr string) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial(network, ln.Addr().String())
	require.NoError(t, err)
	server, ok := <-accepted
	require.True(t, ok, "accept failed")
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// peerGone returns the hang-up Probe sees, or Probe's error; nil while the peer
// is there. It fails no test: Eventually and Never may call it after the
// test has ended.
func peerGone(w *sockwait.Waiter) error {
	_, g, err := w.Probe()
	if err != nil {
		return err
	}
	if g == nil {
		return nil
	}
	return g
}

// unread returns w.Unread and fails the test on error.
func unread(t *testing.T, w interface{ Unread() (int, error) }) int {
	t.Helper()
	n, err := w.Unread()
	require.NoError(t, err)
	return n
}

// hungUp reports whether Probe sees a hang-up, and fails the test on error.
func hungUp(t *testing.T, w *sockwait.Waiter) bool {
	t.Helper()
	return probeGone(t, w) != nil
}

// probeGone returns the hang-up Probe sees (nil while the peer is there),
// and fails the test on error.
func probeGone(t *testing.T, w *sockwait.Waiter) error {
	t.Helper()
	_, gone, err := w.Probe()
	require.NoError(t, err)
	if gone == nil {
		return nil
	}
	return gone
}

// consumed waits, by AwaitRead, until the peer has read everything written
// to conn or hung up, or within has passed, and then probes: it returns the
// queue and the hang-up (nil while the peer is there). It clears the write
// deadline AwaitRead set, as the emitter's next write arms its own: a test's
// plain Write after it must not time out at once on a slow machine.
func consumed(t *testing.T, w *sockwait.Waiter, conn net.Conn, within time.Duration) (int, error) {
	t.Helper()
	defer func() { require.NoError(t, conn.SetWriteDeadline(time.Time{})) }()
	end := time.Now().Add(within)
	for {
		_, err := w.AwaitRead(conn, 10*time.Millisecond, 0, func(n int) bool { return n == 0 })
		require.NoError(t, err)
		n, gone := unread(t, w), probeGone(t, w)
		if n == 0 || gone != nil || time.Now().After(end) {
			return n, gone
		}
	}
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
