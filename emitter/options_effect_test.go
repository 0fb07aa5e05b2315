package emitter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
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
