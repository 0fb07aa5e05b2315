package emitter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// Each test here observes what one option does, so that an option Open
// took but passed on to nothing fails a test.

// AckOnWrite: an event leaves the spool once written, unproven, even while
// the receiver reads nothing.
func TestOptionAckOnWrite(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ paused bool }{
		"receiver reads":         {false},
		"receiver reads nothing": {true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, &refrecv.Options{}, &emitter.Options{AckOnWrite: true})
			if tc.paused {
				r.rcv.PauseReading()
			}
			sent := events("ackonwrite", 30)
			r.emitAll(sent)
			if !tc.paused {
				r.flushUnproven(10*time.Second, len(sent))
				requireDelivered(t, sent, waitLines(t, r.rcv, len(sent)))
				return
			}
			statsUntil(t, r.em, "acknowledged once written", func(st emitter.Stats) bool { return st.Pending == 0 && st.Unproven == 30 })
			require.Zero(t, r.rcv.Count(), "the receiver read nothing: the write alone let them go")
			require.Zero(t, r.em.Stats().Delivered)
			r.rcv.ResumeReading()
			requireDelivered(t, sent, waitLines(t, r.rcv, len(sent)))
		})
	}
}

// ReplayWindow (a size): a read event stays spooled until that many bytes
// more were read after it, and is resent if the receiver goes before.
func TestOptionReplayWindowSize(t *testing.T) {
	t.Parallel()
	const n = 60
	sent := events("window", n)
	size := len(sent[0]) + 1 // every event has the same length
	tests := map[string]struct{ window, held int }{
		"one byte holds the last event": {1, 1},
		"five events' bytes":            {5 * size, 5},
		"twenty events' bytes":          {20 * size, 20},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A linger of an hour: only the window's bytes prove an event handled.
			r := newRig(t, &refrecv.Options{}, &emitter.Options{ReplayWindow: tc.window, ReplayLinger: time.Hour})
			r.emitAll(sent)
			waitLines(t, r.rcv, n)
			statsUntil(t, r.em, fmt.Sprintf("the window holds %d events", tc.held), func(st emitter.Stats) bool {
				return st.Delivered == n-uint64(tc.held) && st.Pending == uint64(tc.held)
			})
			require.NoError(t, r.rcv.Kill())
			require.NoError(t, r.rcv.Restart())
			// The resend may begin with the newest event acknowledged, as the
			// witness that the receiver moved past it.
			var got []string
			require.Eventually(t, func() bool {
				got = r.rcv.Lines()
				return len(got) >= n+tc.held && got[len(got)-1] == sent[n-1]
			}, 10*time.Second, time.Millisecond, "the window resent")
			assert.Equal(t, sent[n-tc.held:], got[len(got)-tc.held:], "the window is what is resent")
			assert.LessOrEqual(t, len(got), n+tc.held+1, "the window and at most the witness are resent")
			assert.True(t, verify.Check(sent, got).OK())
		})
	}
}

// statsUntil waits until em's Stats satisfy cond, and fails with the last
// ones seen if they do not within 20 s.
func statsUntil(t *testing.T, em *emitter.Emitter, what string, cond func(emitter.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st := em.Stats()
		if cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s; last stats: %+v", what, st)
		}
		<-tick.C
	}
}
