package sockwait_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/sockwait"
)

// AwaitRead returns when the peer reads, not at its timeout; at its timeout
// when nobody reads; at once when the peer read before the wait began; and
// when the peer hangs up. It may also return for nothing (a wake-up the
// runtime's poller had from before the wait): a caller looks, and waits
// again, which awaited does, and counts.
func TestAwaitRead(t *testing.T) {
	t.Parallel()
	const never = 5 * time.Second
	awaited := func(w *sockwait.Waiter, was int, d time.Duration) time.Duration {
		begin := time.Now()
		for waits := 1; ; waits++ {
			require.NoError(t, w.AwaitRead(was, d))
			n, gone, err := w.Probe()
			require.NoError(t, err)
			if n != was || gone != nil || time.Since(begin) >= d {
				return time.Since(begin)
			}
			require.Less(t, waits, 3, "woken for nothing again and again")
		}
	}
	t.Run("peer reads", func(t *testing.T) {
		t.Parallel()
		client, server := unixPair(t)
		w := sockwait.New(client)
		require.True(t, w.CanAwaitRead())
		_, err := client.Write(payload(1000))
		require.NoError(t, err)
		was := unread(t, w)
		require.Positive(t, was)
		go func() {
			time.Sleep(50 * time.Millisecond)
			_, _ = io.ReadFull(server, make([]byte, 1000))
		}()
		took := awaited(w, was, never)
		require.GreaterOrEqual(t, took, 40*time.Millisecond, "returned before the read")
		require.Less(t, took, never/2, "the read did not end the wait")
		require.Zero(t, unread(t, w))
	})
	t.Run("nobody reads", func(t *testing.T) {
		t.Parallel()
		client, _ := unixPair(t)
		w := sockwait.New(client)
		_, err := client.Write(payload(1000))
		require.NoError(t, err)
		took := awaited(w, unread(t, w), 50*time.Millisecond)
		require.GreaterOrEqual(t, took, 45*time.Millisecond)
		_, err = client.Write(payload(10)) // a write after a wait has its own deadline
		require.Error(t, err, "the wait's deadline is left set")
		require.NoError(t, client.SetWriteDeadline(time.Time{}))
		_, err = client.Write(payload(10))
		require.NoError(t, err)
	})
	t.Run("read before the wait", func(t *testing.T) {
		t.Parallel()
		client, server := unixPair(t)
		w := sockwait.New(client)
		_, err := client.Write(payload(1000))
		require.NoError(t, err)
		was := unread(t, w)
		_, err = io.ReadFull(server, make([]byte, 1000))
		require.NoError(t, err)
		require.Less(t, awaited(w, was, never), never/2)
	})
	t.Run("peer hangs up", func(t *testing.T) {
		t.Parallel()
		client, server := unixPair(t)
		w := sockwait.New(client)
		_, err := client.Write(payload(1000))
		require.NoError(t, err)
		was := unread(t, w)
		go func() {
			time.Sleep(50 * time.Millisecond)
			server.Close()
		}()
		require.Less(t, awaited(w, was, never), never/2)
		_, gone, err := w.Probe()
		require.NoError(t, err)
		require.NotNil(t, gone)
	})
	t.Run("tcp", func(t *testing.T) {
		t.Parallel()
		client, _ := tcpPair(t)
		w := sockwait.New(client)
		require.False(t, w.CanAwaitRead())
		require.ErrorIs(t, w.AwaitRead(0, never), sockwait.ErrUnsupported)
	})
}
