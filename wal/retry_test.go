package wal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTime is a waiter whose time passes only by waiting (and by spend).
type fakeTime struct {
	t     time.Time
	waits []time.Duration
}

func (f *fakeTime) now() time.Time { return f.t }

func (f *fakeTime) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.waits = append(f.waits, d)
	f.t = f.t.Add(d)
	return nil
}

// runSchedule fails every try, each taking spend, and returns the waits
// made and the tries.
func runSchedule(s schedule, spend time.Duration) ([]time.Duration, int) {
	ft := &fakeTime{t: time.Unix(1e9, 0)}
	r := s.start(ft)
	for {
		ft.t = ft.t.Add(spend)
		if !r.again() {
			return ft.waits, r.tries
		}
		if err := r.wait(context.Background()); err != nil {
			panic(err)
		}
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
	for _, wt := range []waiter{&fakeTime{}, realTime{}} {
		r := openSchedule.start(wt)
		require.True(t, r.again())
		require.ErrorIs(t, r.wait(ctx), context.Canceled)
		require.Zero(t, r.waited)
	}
}

// TestRealTimeWaits: realTime waits at least what it is asked.
func TestRealTimeWaits(t *testing.T) {
	t.Parallel()
	start := time.Now()
	require.NoError(t, realTime{}.wait(context.Background(), 5*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond)
}
