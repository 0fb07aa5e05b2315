package emitter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// PTP nodes step the wall clock (phc2sys at start-up, after a holdover). An
// event's age is measured on the boot clock, which no step moves. The
// clock runs with real time, so an event ages by the time delivery takes
// after the receiver starts: well under the second the cases leave.
func TestMaxAgeIgnoresWallClockSteps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		step      time.Duration
		age       time.Duration // of the events when their turn comes
		wantFresh bool
	}{
		// Before: all 50 expired, counted as lost.
		{"+37s, events 1 s old are fresh", 37 * time.Second, time.Second, true},
		// Before: delivered as fresh.
		{"-1h, events 7 s old are stale", -time.Hour, 7 * time.Second, false},
		{"+1 year, events 4 s old are fresh", 365 * 24 * time.Hour, 4 * time.Second, true},
		{"-1 year, events 5.001 s old are stale", -365 * 24 * time.Hour, 5001 * time.Millisecond, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			r := newRig(t, nil, &emitter.Options{MaxAge: 5 * time.Second, Clock: clk})
			sent := events("ev", 50)
			r.emitAll(sent) // the receiver is down
			clk.Advance(tc.age)
			clk.StepWall(tc.step)
			rcv, err := refrecv.Start("unix", r.sock, nil)
			require.NoError(t, err)
			defer rcv.Close()
			r.flushLossy(10 * time.Second)
			if tc.wantFresh {
				requireDelivered(t, sent, waitLines(t, rcv, len(sent)))
			} else {
				// The drainer counts an expiry just after the spool lost the
				// events, which may be after Flush saw an empty spool.
				require.Eventually(t, func() bool { return r.em.Stats().Expired >= uint64(len(sent)) },
					5*time.Second, time.Millisecond, "stats: %+v", r.em.Stats())
			}
			st := r.em.Stats()
			t.Logf("step %v, events %v old, MaxAge 5s: %d expired, %d delivered", tc.step, tc.age, st.Expired, rcv.Count())
			if tc.wantFresh {
				require.Zero(t, st.Expired, "no event expires early")
			} else {
				require.EqualValues(t, len(sent), st.Expired, "no event is delivered late")
				require.Zero(t, rcv.Count(), "no stale event delivered as fresh")
			}
		})
	}
}

// Across a reboot the boot clock of the earlier boot means nothing: those
// events are aged on the wall clock, and the new boot's on the boot clock.
func TestMaxAgeAcrossAReboot(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, nil, &emitter.Options{MaxAge: 5 * time.Second, Clock: clk})
	r.emitAll([]string{"before-reboot"})
	require.NoError(t, r.em.Close(context.Background()))
	clk.Reboot("fake-boot-2")
	clk.Advance(3 * time.Second)
	clk.StepWall(3 * time.Second) // 6 s on the wall: stale by the wall
	r.open(&emitter.Options{MaxAge: 5 * time.Second, Clock: clk})
	r.emitAll([]string{"after-reboot"})
	clk.StepWall(time.Hour) // no matter within this boot
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flushLossy(10 * time.Second)
	require.Equal(t, []string{"after-reboot"}, waitLines(t, rcv, 1))
	require.EqualValues(t, 1, r.em.Stats().Expired)
}
