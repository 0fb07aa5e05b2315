package emitter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// A cloud-event-proxy-like receiver frozen (SIGSTOP) ten times its stall
// timeout while events keep coming (the 100 s freeze, scaled down):
// nothing is set aside, no connection is opened onto it, and after it
// thaws everything arrives once, in order.
func TestFrozenReceiver(t *testing.T) {
	t.Parallel()
	em, rcv, _, _ := cepRig(t, refrecv.CEPConfig{}, emitter.Options{
		WriteTimeout: 100 * time.Millisecond, StallTimeout: 300 * time.Millisecond, ReplayLinger: 500 * time.Millisecond})
	sent := events("frozen", 300)
	emit := func(evs []string) {
		for _, ev := range evs {
			require.NoError(t, em.Emit(context.Background(), []byte(ev)))
			<-time.After(5 * time.Millisecond) // 200 events a second
		}
	}
	emit(sent[:50])
	require.NoError(t, rcv.Freeze())
	emit(sent[50:250]) // 1 s: the stall timeout passes three times
	require.Eventually(t, func() bool { return !em.Stats().OutageStart.IsZero() }, 5*time.Second, time.Millisecond,
		"a frozen receiver is an outage")
	require.NoError(t, rcv.Thaw())
	emit(sent[250:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	st := em.Stats()
	res := verify.Check(sent, rcv.Lines())
	t.Logf("frozen: dead letters %d, connections %d, stalls %d, %v", st.DeadLettered, st.Reconnects+1, st.Stalls, res)
	assert.Zero(t, st.DeadLettered)
	assert.Zero(t, st.Reconnects, "one connection")
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates)
}
