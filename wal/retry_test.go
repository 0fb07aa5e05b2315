package wal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/clocktest"
	"github.com/evspool/evspool/wal/clock"
)

// leaping is a fake clock whose timers fire as they are armed: time passes
// only by waiting (and by what a test advances).
type leaping struct{ *clocktest.Fake }

func (l leaping) NewTimer(d time.Duration) clock.Timer {
	t := l.Fake.NewTimer(d)
	l.Advance(d)
	return t
}

// runSchedule fails every try, each taking spend, and returns the waits
// made and the tries.
func runSchedule(s schedule, spend time.Duration) ([]time.Duration, int) {
	c := leaping{clocktest.NewFake(time.Unix(1e9, 0))}
	r := s.start(c)
	var waits []time.Duration
	for {
		c.Advance(spend)
		if !r.again() {
			return waits, r.tries
		}
		next := r.next
		if err := r.wait(context.Background()); err != nil {
			panic(err)
		}
		waits = append(waits, next)
	}
}

// TestSchedule: the waits and the number of tries of each of wal's retry
// loops, and of the bounds combined.
func TestSchedule(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name      string
		s         schedule
		spend     time.Duration
		wantWaits []time.Duration
	}{
		{"open: 4 tries, 4x from 20 ms", openSchedule, 0, []time.Duration{20 * ms, 80 * ms, 320 * ms}},
		{"open: tries are the bound, not time", openSchedule, time.Hour, []time.Duration{20 * ms, 80 * ms, 320 * ms}},
		{"lock: every 10 ms until 35 ms have passed", lockSchedule(35 * ms), 0, []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms}},
		{"lock: the time tries take counts", lockSchedule(35 * ms), 5 * ms, []time.Duration{10 * ms, 10 * ms, 10 * ms}},
		{"lock: no timeout, one try", lockSchedule(0), 0, nil},
		{"one try", schedule{first: ms, tries: 1}, 0, nil},
		{"both bounds, time first", schedule{first: ms, factor: 2, tries: 10, total: 5 * ms}, 0, []time.Duration{ms, 2 * ms, 4 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			waits, tries := runSchedule(tc.s, tc.spend)
			require.Equal(t, tc.wantWaits, waits)
			require.Equal(t, len(tc.wantWaits)+1, tries)
		})
	}
}

// TestScheduleCancelled: a wait ends with its context, with its error, and
// is not counted as waited.
func TestScheduleCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []clock.Clock{clocktest.NewFake(time.Unix(1e9, 0)), clock.System()} {
		r := openSchedule.start(c)
		require.True(t, r.again())
		require.ErrorIs(t, r.wait(ctx), context.Canceled)
		require.Zero(t, r.waited)
	}
}

// TestScheduleWaitsOnTheClock: a wait ends once the clock has moved by it,
// not before.
func TestScheduleWaitsOnTheClock(t *testing.T) {
	t.Parallel()
	f := clocktest.NewFake(time.Unix(1e9, 0))
	r := openSchedule.start(f)
	require.True(t, r.again())
	waited := make(chan error, 1)
	go func() { waited <- r.wait(context.Background()) }()
	require.Eventually(t, func() bool { return f.Timers() == 1 }, 5*time.Second, time.Millisecond)
	f.Advance(openSchedule.first - time.Nanosecond)
	require.Equal(t, 1, f.Timers(), "woke before its time")
	f.Advance(time.Nanosecond)
	require.NoError(t, <-waited)
	require.Equal(t, openSchedule.first, r.waited)
}
