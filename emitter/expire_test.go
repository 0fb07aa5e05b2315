package emitter_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/clocktest"
)

// flushLossy is rig.flush for a test where events expire: Flush may report
// them as not delivered (it does once Flush counts losses), but it must
// return before its deadline.
func (r *rig) flushLossy(d time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := r.em.Flush(ctx); err != nil {
		require.NotErrorIs(r.t, err, context.DeadlineExceeded, "stats: %+v", r.em.Stats())
		require.ErrorContains(r.t, err, "expired")
	}
}

// newClock is a clock for Options.Clock that runs with real time and that
// a test can move on (age events) or step (the wall clock).
func newClock() *clocktest.Fake {
	return clocktest.NewRunning(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// After a long outage, events older than MaxAge are dropped unsent, counted
// and logged once; the fresh ones are delivered, in order.
func TestMaxAgeExpiresStaleEvents(t *testing.T) {
	t.Parallel()
	clk := newClock()
	// Batches of 100: the stale events expire in three steps, one logged at
	// once, two within the warning interval.
	r := newRig(t, nil, &emitter.Options{MaxAge: 10 * time.Minute, Clock: clk, BatchEvents: 100})
	stale := events("stale", 300)
	r.emitAll(stale) // the receiver is down
	clk.Advance(time.Hour)
	fresh := events("fresh", 200)
	r.emitAll(fresh)

	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flushLossy(10 * time.Second)
	requireDelivered(t, fresh, waitLines(t, rcv, len(fresh)))
	require.Equal(t, fresh, rcv.Lines(), "no stale event was sent")

	st := r.em.Stats()
	require.EqualValues(t, 300, st.Expired)
	require.EqualValues(t, 300, st.Spool.Expired.Events)
	require.EqualValues(t, 200, st.Delivered)
	require.Zero(t, st.Pending)
	const msg = "events older than the maximum age dropped unsent"
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "logged, rate-limited")
	n, ok := r.logs.attr(msg, "expired_events")
	require.True(t, ok)
	require.LessOrEqual(t, n.Uint64(), uint64(300))

	// Close logs the rest; the count is kept in the spool file.
	require.NoError(t, r.em.Close(context.Background()))
	require.Equal(t, 300, r.logs.sum(msg, "expired_events"), "every expired event was in a log line")
	r.open(&emitter.Options{MaxAge: 10 * time.Minute, Clock: clk})
	st = r.em.Stats()
	require.EqualValues(t, 300, st.Spool.Expired.Events, "the spool file's count survives a restart")
	require.Zero(t, st.Expired, "Stats.Expired counts this process's, as Lost needs")
}

// An event of an earlier boot whose wall clock stepped back sits among fresh
// ones (across a reboot only the wall clock is left): it is expired when its
// turn comes, and those around it are delivered in order.
func TestMaxAgeKeepsOrderAroundAnOldEvent(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, nil, &emitter.Options{MaxAge: time.Minute, Clock: clk})
	r.emitAll([]string{"a", "b"})
	clk.StepWall(-time.Hour) // the clock stepped back
	r.emitAll([]string{"old"})
	clk.StepWall(time.Hour)
	r.emitAll([]string{"c"})
	require.NoError(t, r.em.Close(context.Background()))
	clk.Reboot("fake-boot-2")
	clk.Advance(30 * time.Second)
	r.open(&emitter.Options{MaxAge: time.Minute, Clock: clk})

	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flushLossy(10 * time.Second)
	waitLines(t, rcv, 3)
	require.Equal(t, []string{"a", "b", "c"}, rcv.Lines())
	require.EqualValues(t, 1, r.em.Stats().Expired)
}

// Without MaxAge nothing expires, however old.
func TestMaxAgeOffByDefault(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, nil, &emitter.Options{Clock: clk})
	r.emitAll([]string{"ancient"})
	clk.Advance(1000 * time.Hour)
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flush(10 * time.Second)
	require.Equal(t, []string{"ancient"}, waitLines(t, rcv, 1))
	require.Zero(t, r.em.Stats().Expired)
}

func TestMaxAgeNegativeRefused(t *testing.T) {
	t.Parallel()
	_, err := emitter.Open("x.sock", t.TempDir(), &emitter.Options{MaxAge: -time.Second})
	require.ErrorContains(t, err, "MaxAge -1s is negative")
}

// Flush returns when everything left the spool by expiring: nothing was
// acknowledged, but nothing is pending either.
func TestFlushReturnsWhenAllExpired(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, nil, &emitter.Options{MaxAge: time.Minute, Clock: clk})
	r.emitAll(events("stale", 50))
	clk.Advance(time.Hour)
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Flush reports on what it waited for: the events may have expired
	// before it looked (then it waited for nothing and says nil).
	if err := r.em.Flush(ctx); err != nil {
		var fe *emitter.FlushError
		require.ErrorAs(t, err, &fe)
		require.ErrorIs(t, fe, emitter.ErrNotDelivered)
		require.Zero(t, fe.Delivered)
		require.Equal(t, fe.Waited, fe.Expired)
	}
	require.EqualValues(t, 50, r.em.Stats().Expired)
	require.EqualValues(t, 50, r.em.Stats().Lost())
	require.Zero(t, rcv.Count())
}

// sum adds up the integer attribute key of the records with msg.
func (l *logSink) sum(msg, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for _, r := range l.records {
		if r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				total += int(a.Value.Uint64())
			}
			return true
		})
	}
	return total
}
