package sockwait_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/sockwait"
)

func TestUnsupportedConnections(t *testing.T) {
	t.Parallel()
	pipeA, pipeB := net.Pipe()
	t.Cleanup(func() { _ = pipeA.Close(); _ = pipeB.Close() })

	dir, err := os.MkdirTemp("", "sw")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	gram, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "g.sock"), Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gram.Close() })

	tests := map[string]net.Conn{"net.Pipe": pipeA, "unixgram": gram, "nil": nil}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			w := sockwait.New(c)
			assert.False(t, w.Supported())
			_, err := w.Unread()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			_, err = w.PeerClosedWrite()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			_, _, err = w.Probe()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			_, err = w.AwaitRead(c, time.Hour, 1, func(int) bool { return true })
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
		})
	}
}

func TestSupportedOnLinux(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	unixClient, _ := unixPair(t)
	tcpClient, _ := tcpPair(t)
	assert.True(t, sockwait.New(unixClient).Supported())
	assert.True(t, sockwait.New(tcpClient).Supported())
}

func TestClosedConnection(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	client, _ := unixPair(t)
	w := sockwait.New(client)
	require.NoError(t, client.Close())

	_, err := w.Unread()
	require.ErrorIs(t, err, net.ErrClosed)
	assert.Equal(t, "closed", sockwait.Classify(err))
	_, _, err = w.Probe()
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = w.AwaitRead(client, time.Hour, 0, func(int) bool { return false })
	require.ErrorIs(t, err, net.ErrClosed)
}

// TestAwaitReadEndsAtMax: past max, AwaitRead returns what is still unread
// and no error; the caller looks again on its own schedule.
func TestAwaitReadEndsAtMax(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	client, _ := unixPair(t)
	w := sockwait.New(client)
	_, err := client.Write([]byte("never read\n"))
	require.NoError(t, err)
	n, err := w.AwaitRead(client, 20*time.Millisecond, 2, func(n int) bool { return n == 0 })
	require.NoError(t, err)
	assert.Positive(t, n, "bytes queued unread")
}

func TestAwaitReadNothingWritten(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	client, _ := unixPair(t)
	n, err := sockwait.New(client).AwaitRead(client, time.Hour, 0, func(n int) bool { return n == 0 })
	require.NoError(t, err)
	require.Zero(t, n, "an empty queue needs no waiting")
}

// TestAwaitReadStreaming writes a large stream while the peer reads it in
// small pieces, the way a bufio.Scanner does, and waits for the end.
func TestAwaitReadStreaming(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	for name, mk := range map[string]func(*testing.T) (net.Conn, net.Conn){"unix": unixPair, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			client, server := mk(t)
			const size = 4 << 20
			done := make(chan int64, 1)
			go func() {
				n, _ := io.CopyBuffer(io.Discard, io.LimitReader(server, size), make([]byte, 4096))
				done <- n
			}()
			_, err := client.Write(payload(size))
			require.NoError(t, err)

			start := time.Now()
			n, gone := consumed(t, sockwait.New(client), client, 10*time.Second)
			require.NoError(t, gone)
			require.Zero(t, n)
			t.Logf("%s: waited %v after the last write", name, time.Since(start))
			require.Equal(t, int64(size), <-done)
		})
	}
}
