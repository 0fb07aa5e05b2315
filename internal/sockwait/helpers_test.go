package sockwait_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
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

// unread returns w.Unread and fails the test on error.
func unread(t *testing.T, w interface{ Unread() (int, error) }) int {
	t.Helper()
	n, err := w.Unread()
	require.NoError(t, err)
	return n
}

// hungUp returns w.HungUp and fails the test on error.
func hungUp(t *testing.T, w interface{ HungUp() (bool, error) }) bool {
	t.Helper()
	gone, err := w.HungUp()
	require.NoError(t, err)
	return gone
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
