package sockwait_test

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/sockwait"
)

func TestUnixUnreadCountsQueuedBuffers(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 100, 1000, 4096, 65536} {
		client, server := unixPair(t)
		w := sockwait.New(client)
		require.True(t, w.Supported())
		require.Zero(t, unread(t, w), "fresh connection")

		_, err := client.Write(payload(size))
		require.NoError(t, err)
		queued := unread(t, w)
		t.Logf("unix: wrote %d bytes, SIOCOUTQ=%d", size, queued)
		assert.GreaterOrEqual(t, queued, size, "SIOCOUTQ counts buffer memory, never less than the payload")

		_, err = io.ReadFull(server, make([]byte, size))
		require.NoError(t, err)
		assert.Zero(t, unread(t, w), "peer read everything")
		assert.False(t, hungUp(t, w))
	}
}

func TestUnixPartialReadKeepsQueueNonZero(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	w := sockwait.New(client)
	_, err := client.Write(payload(1000))
	require.NoError(t, err)

	_, err = io.ReadFull(server, make([]byte, 999))
	require.NoError(t, err)
	left := unread(t, w)
	t.Logf("unix: 1 of 1000 bytes left unread, SIOCOUTQ=%d", left)
	assert.Positive(t, left, "a buffer is freed only when fully read")

	n, err := w.AwaitRead(client, 20*time.Millisecond, 0, func(n int) bool { return n == 0 })
	require.NoError(t, err)
	require.Positive(t, n, "still unread after the wait")

	_, err = io.ReadFull(server, make([]byte, 1))
	require.NoError(t, err)
	n, gone := consumed(t, w, client, 5*time.Second)
	require.NoError(t, gone)
	require.Zero(t, n)
}

func TestUnixPeerClosesWithoutReading(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	w := sockwait.New(client)
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	require.Positive(t, unread(t, w))

	require.NoError(t, server.Close())
	assert.Zero(t, unread(t, w), "closing frees the unread buffers: 0 does not mean read")

	err = probeGone(t, w) // once: the first look takes the socket's pending error
	require.ErrorIs(t, err, sockwait.ErrPeerGone)
	require.ErrorIs(t, err, syscall.ECONNRESET, "the kernel flags a close with unread data")
	assert.Equal(t, "connection_reset", sockwait.Classify(err))
	t.Logf("unix: peer closed without reading: %v", err)
}

func TestUnixPeerReadsThenCloses(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	w := sockwait.New(client)
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	_, err = io.ReadFull(server, make([]byte, 5000))
	require.NoError(t, err)
	require.NoError(t, server.Close())

	err = probeGone(t, w)
	require.ErrorIs(t, err, sockwait.ErrPeerGone, "a hang-up is reported even when everything was read")
	require.ErrorIs(t, err, io.EOF, "no reset: the peer's queue was empty when it closed")
	var gone *sockwait.PeerGoneError
	require.True(t, errors.As(err, &gone))
	assert.Zero(t, gone.Unread)
	assert.Equal(t, "closed", sockwait.Classify(err))
}

// TestUnixHalfClosedPeerIsNotGone: a receive-only peer that shut down its
// writing side still reads, and what it reads is acknowledged.
func TestUnixHalfClosedPeerIsNotGone(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	halfClosedPeerIsNotGone(t, client, server)
}

func halfClosedPeerIsNotGone(t *testing.T, client, server net.Conn) {
	t.Helper()
	w := sockwait.New(client)
	require.False(t, hungUp(t, w))
	require.NoError(t, server.(interface{ CloseWrite() error }).CloseWrite())
	assert.False(t, hungUp(t, w), "POLLRDHUP alone is a half-close, not a hang-up")
	_, err := client.Write(payload(5000))
	require.NoError(t, err)
	_, err = io.ReadFull(server, make([]byte, 5000))
	require.NoError(t, err)
	n, gone := consumed(t, w, client, 5*time.Second)
	require.NoError(t, gone, "a half-closed peer is there")
	require.Zero(t, n, "read by a half-closed peer")
	require.NoError(t, server.Close())
	require.Eventually(t, func() bool {
		_, _ = client.Write([]byte("x")) // on TCP only a write draws the reset
		return peerGone(w) != nil
	}, 5*time.Second, time.Millisecond, "a full close after the half-close is a hang-up")
}

func TestUnixProbeDoesNotConsume(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	w := sockwait.New(client)
	_, err := server.Write([]byte("hello"))
	require.NoError(t, err)
	require.False(t, hungUp(t, w), "pending input is not a hang-up")
	require.NoError(t, server.Close())
	require.True(t, hungUp(t, w))
	require.True(t, hungUp(t, w), "polling twice changes nothing")

	got, err := io.ReadAll(client)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
}

// TestUnixProbeTellsReadFromUnread: after a hang-up the queue reads 0 either
// way; the cause tells whether the peer had read everything.
func TestUnixProbeTellsReadFromUnread(t *testing.T) {
	t.Parallel()
	for name, readFirst := range map[string]bool{"read everything": true, "read nothing": false} {
		t.Run(name, func(t *testing.T) {
			client, server := unixPair(t)
			w := sockwait.New(client)
			_, err := client.Write(payload(3000))
			require.NoError(t, err)
			if readFirst {
				_, err = io.ReadFull(server, make([]byte, 3000))
				require.NoError(t, err)
			}
			require.NoError(t, server.Close())
			unread, gone, err := w.Probe()
			require.NoError(t, err)
			require.NotNil(t, gone)
			assert.Zero(t, unread)
			assert.Equal(t, !readFirst, errors.Is(gone.Cause, syscall.ECONNRESET), "cause %v", gone.Cause)
		})
	}
}

// TestSendMem reads the send buffer's size and what its queue holds, and
// grows the buffer when asked.
func TestSendMem(t *testing.T) {
	t.Parallel()
	client, _ := unixPair(t)
	w := sockwait.New(client)
	sndbuf, queued, err := w.SendMem(0)
	require.NoError(t, err)
	require.Positive(t, sndbuf)
	require.Zero(t, queued, "nothing written")
	_, err = client.Write(payload(1000))
	require.NoError(t, err)
	_, queued, err = w.SendMem(0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, queued, 1000, "unread: held, with the buffer's overhead")
	grown, _, err := w.SendMem(2 * sndbuf)
	require.NoError(t, err)
	require.Greater(t, grown, sndbuf, "raised")
}
