package sockwait_test

import (
	"context"
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
			_, err = w.HungUp()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			_, err = w.PeerClosedWrite()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			_, _, err = w.Probe()
			assert.ErrorIs(t, err, sockwait.ErrUnsupported)
			assert.ErrorIs(t, w.WaitConsumed(context.Background()), sockwait.ErrUnsupported)
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
	_, err = w.HungUp()
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, w.WaitConsumed(context.Background()), net.ErrClosed)
}

func TestWaitConsumedCancelled(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	client, _ := unixPair(t)
	w := sockwait.New(client)
	_, err := client.Write([]byte("never read\n"))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = w.WaitConsumed(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "bytes queued unread")
}

func TestWaitConsumedNothingWritten(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	client, _ := unixPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, sockwait.New(client).WaitConsumed(ctx), "an empty queue needs no waiting")
}

// TestWaitConsumedStreaming writes a large stream while the peer reads it in
// small pieces, the way a bufio.Scanner does, and waits for the end.
func TestWaitConsumedStreaming(t *testing.T) {
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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, sockwait.New(client).WaitConsumed(ctx))
			t.Logf("%s: waited %v after the last write", name, time.Since(start))
			require.Equal(t, int64(size), <-done)
		})
	}
}
