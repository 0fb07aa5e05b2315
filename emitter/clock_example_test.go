package emitter_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// stepClock is a Clock written as a program outside this module would
// write one, with emitter's exported types only: real time, moved on by
// skip.
type stepClock struct {
	mu   sync.Mutex
	skip time.Duration
	real time.Time // its start: Boot counts from it
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skip)
}

func (c *stepClock) Boot() time.Duration { return c.Now().Sub(c.real) }
func (c *stepClock) BootID() string      { return "step" }

func (c *stepClock) NewTimer(d time.Duration) emitter.Timer { return stepTimer{time.NewTimer(d)} }

type stepTimer struct{ t *time.Timer }

func (t stepTimer) C() <-chan time.Time        { return t.t.C }
func (t stepTimer) Stop() bool                 { return t.t.Stop() }
func (t stepTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// A Clock of the program's own ages events: an event stamped an hour
// before the clock moves on expires under MaxAge.
func TestClockOfYourOwn(t *testing.T) {
	t.Parallel()
	clk := &stepClock{real: time.Now()}
	var _ emitter.Clock = clk
	r := newRig(t, nil, &emitter.Options{MaxAge: time.Minute, Clock: clk})
	r.emitAll([]string{"stale"})
	clk.mu.Lock()
	clk.skip = time.Hour
	clk.mu.Unlock()
	r.emitAll([]string{"fresh"})
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flushLossy(10 * time.Second)
	waitLines(t, rcv, 1)
	require.Equal(t, []string{"fresh"}, rcv.Lines())
	require.EqualValues(t, 1, r.em.Stats().Expired)
}
