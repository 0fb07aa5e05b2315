//go:build linux

package emitter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With a receiver connected and nothing pending, the drainer takes no step
// until something happens: no look at the socket, no heartbeat. It is alive
// all the same, however long it waits, and a receiver that hangs up is
// noticed when it does, not at the next event.
func TestIdleTakesNoSteps(t *testing.T) {
	t.Parallel()
	const limit = 10 * time.Millisecond      // the wedge limit is twice this
	const idleCheck = 100 * time.Millisecond // delivery's idle look
	e, _, rcv := openOnReceiver(t, Options{ReplayLinger: 20 * time.Millisecond,
		DialTimeout: limit, WriteTimeout: limit, StallTimeout: limit})
	for _, ev := range []string{"one", "two", "three"} {
		require.NoError(t, e.Emit(context.Background(), []byte(ev)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.Flush(ctx))
	// Acknowledged deletions are committed by an idle look: then nothing
	// is pending.
	require.Eventually(t, func() bool { return !e.spool.AcksPending() }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * idleCheck) // a look that was due has been taken
	beat := e.link.pub.health.lastBeat.Load()
	time.Sleep(5 * idleCheck)
	require.Equal(t, beat, e.link.pub.health.lastBeat.Load(), "the idle drainer took a step with nothing pending")
	require.NoError(t, e.Alive(), "idle for %v, 25 times the wedge limit", 5*idleCheck)

	require.NoError(t, rcv.Kill())
	require.Eventually(t, func() bool { return !e.Stats().Connected }, 2*time.Second, time.Millisecond,
		"the hang-up of an idle receiver is noticed without an event")
}
