package emitter_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// heldWindow is how long a test watches for lines that must not come.
const heldWindow = 300 * time.Millisecond

// While held nothing reaches the receiver, on the connection that was kept,
// though events keep spooling (by Emit and by a Writer); at Release the
// preamble comes again first, on the same connection, then the held events
// in order.
func TestHoldKeepsConnectionWritesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Preamble: writeLiveStart, PreambleOnRelease: true})
	before := events("before", 50)
	r.emitAll(before)
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, len(before)+1)

	r.em.Hold()
	require.True(t, r.em.Held())
	held := events("held", 50)
	r.emitAll(held)
	w := r.em.Writer()
	_, err := io.WriteString(w, "written while held by a Writer\n")
	require.NoError(t, err)
	held = append(held, "written while held by a Writer")
	got := len(before) + 1
	require.Never(t, func() bool { return r.rcv.Count() > got }, heldWindow, 5*time.Millisecond,
		"lines arrived while held")
	st := r.em.Stats()
	require.True(t, st.Connected, "the connection is kept")
	require.EqualValues(t, len(held), st.Pending, "held events stay spooled")
	require.NoError(t, r.em.Alive(), "a hold is not a wedged drainer")

	r.em.Release()
	r.flush(5 * time.Second)
	lines := waitLines(t, r.rcv, got+1+len(held))
	require.Equal(t, append([]string{liveStart}, held...), lines[got:])
	require.Equal(t, 1, r.rcv.Accepted(), "one connection throughout")
	for _, l := range r.rcv.Received() {
		require.Equal(t, r.rcv.Received()[0].Conn, l.Conn)
	}
}

// Without PreambleOnRelease, Release resumes where delivery stopped.
func TestReleaseWithoutPreambleAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{Preamble: writeLiveStart})
	r.em.Hold()
	r.em.Hold() // holds do not nest
	// The receiver starts after the Hold: the connection is made while held.
	rcv, err := refrecv.Start("unix", r.sock, &refrecv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { rcv.Close() })
	r.rcv = rcv
	require.Eventually(t, func() bool { return r.em.Stats().Connected }, 5*time.Second, time.Millisecond)
	sent := events("held", 20)
	r.emitAll(sent)
	require.Never(t, func() bool { return r.rcv.Count() > 0 }, heldWindow, 5*time.Millisecond,
		"a connection made while held gets nothing, not even its preamble")
	r.em.Release()
	r.flush(5 * time.Second)
	require.Equal(t, append([]string{liveStart}, sent...), waitLines(t, r.rcv, len(sent)+1))
	r.em.Hold()
	more := events("more", 5)
	r.emitAll(more)
	r.em.Release()
	r.em.Release() // a Release without a Hold changes nothing
	r.flush(5 * time.Second)
	lines := waitLines(t, r.rcv, len(sent)+1+len(more))
	require.Equal(t, more, lines[len(sent)+1:], "no second preamble")
}

// A receiver that restarts while held is redialled, but the new
// connection gets nothing, preamble included, until Release.
func TestHoldThroughReceiverRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Preamble: writeLiveStart, PreambleOnRelease: true})
	r.emitAll(events("before", 10))
	r.flush(5 * time.Second)
	r.em.Hold()
	r.rcv.Close()
	r.rcv.Reset()
	require.Eventually(t, func() bool { return !r.em.Stats().Connected }, 5*time.Second, 5*time.Millisecond,
		"the hang-up is noticed while held")
	require.NoError(t, r.rcv.Restart())
	sent := events("held", 10)
	r.emitAll(sent)
	require.Eventually(t, func() bool { return r.rcv.Accepted() >= 1 }, 5*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return r.rcv.Count() > 0 }, heldWindow, 5*time.Millisecond,
		"lines arrived while held")
	r.em.Release()
	r.flush(5 * time.Second)
	lines := waitLines(t, r.rcv, len(sent)+1)
	require.Equal(t, append([]string{liveStart}, sent...), lines, "one preamble, then the held events")
}

// gateConn is a connection that fails the test's count if anything is
// written to it while the test says the gate is shut.
type gateConn struct {
	net.Conn
	shut       *atomic.Bool
	violations *atomic.Int64
	writes     *atomic.Int64
}

func (c gateConn) Write(p []byte) (int, error) {
	if c.shut.Load() {
		c.violations.Add(1)
	}
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A Hold that comes while a backlog is being written: once Hold returns, no
// write reaches the connection until Release, and nothing is lost or
// reordered.
func TestHoldMidBacklog(t *testing.T) {
	t.Parallel()
	var shut atomic.Bool
	var violations, writes atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return gateConn{Conn: c, shut: &shut, violations: &violations, writes: &writes}, nil
	}
	r := newRig(t, &refrecv.Options{Rate: 20000}, &emitter.Options{Dial: dial, BatchEvents: 10})
	sent := events("backlog", 3000)
	r.emitAll(sent)
	for round := 0; round < 5; round++ {
		require.Eventually(t, func() bool { return writes.Load() > int64(round*20) }, 5*time.Second, time.Millisecond)
		r.em.Hold()
		shut.Store(true)
		require.Never(t, func() bool { return violations.Load() > 0 }, 50*time.Millisecond, time.Millisecond)
		shut.Store(false)
		r.em.Release()
	}
	r.flushUnproven(10*time.Second, len(sent)) // gateConn hides the socket's reads
	waitDelivered(t, r.rcv, sent)
	require.Zero(t, violations.Load(), "writes while held")
}

// Close with the gate shut returns at once, whether the drainer waits on
// the gate or in a preamble that respects its context.
func TestCloseWhileHeld(t *testing.T) {
	for name, release := range map[string]bool{"held": false, "preamble waiting after release": true} {
		t.Run(name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			var calls atomic.Int32
			r := newRig(t, &refrecv.Options{}, &emitter.Options{PreambleOnRelease: true,
				Preamble: func(ctx context.Context, w io.Writer) error {
					if calls.Add(1) == 1 {
						return writeLiveStart(ctx, w)
					}
					entered <- struct{}{}
					<-ctx.Done() // the replay that never finishes
					return ctx.Err()
				}})
			r.emitAll(events("before", 5))
			r.flush(5 * time.Second)
			r.em.Hold()
			r.emitAll(events("held", 5))
			if release {
				r.em.Release()
				within(t, entered, "preamble again")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			begin := time.Now()
			require.NoError(t, r.em.Close(ctx))
			require.Less(t, time.Since(begin), time.Second, "Close waited on the gate")
			require.Zero(t, r.em.Stats().PreambleErrors)
		})
	}
}

// MaxHold releases a hold the daemon never releases, with a warning.
func TestMaxHoldReleases(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Clock: clk, MaxHold: time.Minute})
	r.em.Hold()
	sent := events("held", 10)
	r.emitAll(sent)
	require.Never(t, func() bool { return r.rcv.Count() > 0 }, heldWindow, 5*time.Millisecond)
	clk.Advance(time.Minute)
	waitDelivered(t, r.rcv, sent)
	require.False(t, r.em.Held())
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "delivery held longer than the maximum; released without Release"))
}

// Hold, Release and Emit from many goroutines: the race detector's test.
func TestHoldReleaseConcurrent(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	sent := events("mixed", 400)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			r.em.Hold()
			r.em.Release()
		}
	}()
	errs := make(chan error, len(sent))
	go func() {
		defer wg.Done()
		for _, ev := range sent {
			errs <- r.em.Emit(context.Background(), []byte(ev))
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	r.flush(10 * time.Second)
	waitDelivered(t, r.rcv, sent)
}
