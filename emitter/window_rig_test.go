package emitter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// A receiver that reads ahead of what it handles (refrecv.Options.HandleTime)
// is killed with lines read but not handled: the replay window resends them.
func TestReplayWindowCoversReadAhead(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{HandleTime: 2 * time.Millisecond}, &emitter.Options{ReplayLinger: time.Second})
	sent := events("ahead", 300)
	r.emitAll(sent)
	waitLines(t, r.rcv, 50) // the scanner has read ~40 more than it handled
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	r.flush(20 * time.Second)
	res := requireDelivered(t, sent, r.rcv.Lines())
	t.Logf("%v", res)
	require.Positive(t, res.Duplicates, "the window was replayed")
}
