package torture

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// TestPrecisionResume: how soon evspool writes to a receiver that listens
// again after a SIGKILL, half a second later, events streaming at 100 a
// second. The figure is the time from the restarted receiver listening to
// its first handled line, over 20 restarts (5 outside make torture); the
// target is 50 ms every time. A receiver that handled events before it died
// is no crash loop: nothing may hold the dial back.
func TestPrecisionResume(t *testing.T) {
	skipShort(t)
	for _, rate := range []int{100, 5} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) { precisionResume(t, rate) })
	}
}

func precisionResume(t *testing.T, rate int) {
	restarts := 20
	r := newCEPRig(t, refrecv.CEPConfig{PerLine: 200 * time.Microsecond})
	evs := precisionEvents(rate * (restarts + 2))
	c := r.run("unix", "--drain-timeout", "30s")
	stop := make(chan struct{})
	defer close(stop)
	go produceFrom(c, evs, 0, float64(rate), stop)
	var took []time.Duration
	for range restarts {
		require.Eventually(t, func() bool { return len(r.rcv.Lines()) > 0 }, 10*time.Second, time.Millisecond)
		time.Sleep(300 * time.Millisecond) // streaming to a live receiver, not waiting for something
		r.rcv.Kill()
		time.Sleep(500 * time.Millisecond) // the receiver's outage
		before := len(r.rcv.Lines())
		require.NoError(t, r.rcv.Restart())
		listening := time.Now()
		require.Eventually(t, func() bool { return len(r.rcv.Lines()) > before }, 10*time.Second, 100*time.Microsecond)
		took = append(took, time.Since(listening))
	}
	slices.Sort(took)
	t.Logf("precision: resume after %d receiver restarts (0.5 s down, %d/s): median %v, worst %v; all %v",
		restarts, rate, took[len(took)/2].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond), took)
	assert.LessOrEqual(t, took[len(took)-1], 50*time.Millisecond, "resume after a restart")
}
