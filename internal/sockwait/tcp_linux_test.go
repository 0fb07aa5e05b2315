package sockwait_test

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/sockwait"
)

// TestTCPZeroMeansReceivedByPeerKernel shows the weaker TCP meaning: the
// queue empties once the peer's kernel acknowledges, even if nobody reads.
func TestTCPZeroMeansReceivedByPeerKernel(t *testing.T) {
	t.Parallel()
	client, _ := tcpPair(t)
	w := sockwait.New(client)
	require.True(t, w.Supported())
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	t.Logf("tcp: wrote 5000 bytes, SIOCOUTQ right after write=%d", unread(t, w))

	n, gone := consumed(t, w, client, 5*time.Second)
	require.NoError(t, gone)
	require.Zero(t, n, "acked by the peer kernel, unread by the peer")
}

// TestTCPFullReceiverKeepsQueue fills the peer's receive window so that
// bytes stay unacknowledged, then lets the peer read them.
func TestTCPFullReceiverKeepsQueue(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	require.NoError(t, server.(*net.TCPConn).SetReadBuffer(64<<10))
	w := sockwait.New(client)

	const size = 1 << 20
	written := make(chan error, 1)
	go func() {
		_, err := client.Write(payload(size))
		written <- err
	}()
	require.Eventually(t, func() bool { n, err := w.Unread(); return err == nil && n > 0 }, 5*time.Second, time.Millisecond)
	t.Logf("tcp: peer not reading, SIOCOUTQ=%d (of %d written so far or pending)", unread(t, w), size)

	// Not AwaitRead: its write deadline would end the writer's Write.
	assert.Never(t, func() bool { n, err := w.Unread(); return err == nil && n == 0 }, 20*time.Millisecond, time.Millisecond,
		"unacknowledged while the peer does not read")

	_, err := io.ReadFull(server, make([]byte, size))
	require.NoError(t, err)
	require.NoError(t, <-written)
	n, gone := consumed(t, w, client, 5*time.Second)
	require.NoError(t, gone)
	require.Zero(t, n)
}

func TestTCPPeerClosesWithoutReading(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	w := sockwait.New(client)
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	n, gone := consumed(t, w, client, 5*time.Second)
	require.NoError(t, gone)
	require.Zero(t, n)

	// Unread data makes the peer's kernel answer the close with a reset.
	require.NoError(t, server.Close())
	// The first look that sees the hang-up takes the socket's pending error.
	require.Eventually(t, func() bool { err = peerGone(w); return err != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, err, sockwait.ErrPeerGone)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	t.Logf("tcp: peer closed without reading: %v", err)
}

func TestTCPPeerReadsThenCloses(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	w := sockwait.New(client)
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	_, err = io.ReadFull(server, make([]byte, 5000))
	require.NoError(t, err)
	require.False(t, hungUp(t, w))

	require.NoError(t, server.Close())
	// A FIN alone looks like a half-close: the next write draws the reset.
	require.Eventually(t, func() bool {
		_, _ = client.Write([]byte("x"))
		return peerGone(w) != nil
	}, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, probeGone(t, w), sockwait.ErrPeerGone)
}

// TestTCPHalfClosedPeerIsNotGone is TestUnixHalfClosedPeerIsNotGone on TCP.
func TestTCPHalfClosedPeerIsNotGone(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	halfClosedPeerIsNotGone(t, client, server)
}

func TestTCPHungUpWhileQueued(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	require.NoError(t, server.(*net.TCPConn).SetReadBuffer(64<<10))
	w := sockwait.New(client)
	go func() { _, _ = client.Write(payload(1 << 20)) }()
	require.Eventually(t, func() bool { n, err := w.Unread(); return err == nil && n > 0 }, 5*time.Second, time.Millisecond)

	require.NoError(t, server.(*net.TCPConn).SetLinger(0))
	require.NoError(t, server.Close())
	var err error
	require.Eventually(t, func() bool { err = peerGone(w); return err != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, err, sockwait.ErrPeerGone, "a reset is a hang-up even with bytes queued")
	t.Logf("tcp: reset with data queued: %v", err)
	require.NoError(t, client.Close())
}

// TestTCPPeerClosedAfterReading: a TCP peer that read everything and closed
// sends a FIN only, which Probe does not see but PeerClosedWrite does.
func TestTCPPeerClosedAfterReading(t *testing.T) {
	t.Parallel()
	client, server := tcpPair(t)
	w := sockwait.New(client)
	fin, err := w.PeerClosedWrite()
	require.NoError(t, err)
	require.False(t, fin, "open")
	_, err = client.Write([]byte("line\n"))
	require.NoError(t, err)
	_, err = io.ReadFull(server, make([]byte, 5))
	require.NoError(t, err)
	require.NoError(t, server.Close())
	require.Eventually(t, func() bool {
		fin, err := w.PeerClosedWrite()
		return err == nil && fin
	}, 5*time.Second, time.Millisecond)
	require.False(t, hungUp(t, w), "a FIN alone is not a hang-up until a write draws the reset")
}
