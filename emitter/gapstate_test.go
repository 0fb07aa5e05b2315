//go:build linux

package emitter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// Drop-oldest keeps the events in flight and drops the oldest after them.
// A key whose newest event was dropped there reaches the receiver as a
// state line where the gap is, on the same connection: it ends with every
// key's newest value, and no key goes back.
func TestGapStateAfterDrops(t *testing.T) {
	t.Parallel()
	e, d, rcv := openOnReceiver(t, Options{StateKey: JSONStateKey([]string{"k"}, ""),
		MaxSpoolBytes: wal.MinMaxBytes, OnFull: wal.DropOldest, StallTimeout: time.Minute, WriteTimeout: time.Minute})
	ctx := context.Background()
	pad := strings.Repeat("x", 2000)
	ev := func(k string, n int) []byte { return fmt.Appendf(nil, `{"k":%q,"n":%d,"pad":%q}`, k, n, pad) }
	require.NoError(t, e.Emit(ctx, ev("a", 0)))
	require.Eventually(t, func() bool { return len(rcv.Lines()) == 1 }, 5*time.Second, time.Millisecond)
	rcv.PauseReading()
	// Handed out: the batch the drainer read, which waits to be read.
	n := 0
	for ; n < 200; n++ {
		require.NoError(t, e.Emit(ctx, ev("a", n+1)))
	}
	require.Eventually(t, func() bool { return d.ctl.readTo.Load() > 1 }, 10*time.Second, time.Millisecond,
		"the drainer read a batch")
	last := map[string]int{"a": n}
	require.NoError(t, e.Emit(ctx, ev("b", 1))) // b's newest: dropped behind what is in flight
	last["b"] = 1
	for i := 0; e.Stats().Spool.DroppedOldest.Events < 1000; i++ {
		require.NoError(t, e.Emit(ctx, ev("c", i)))
		last["c"] = i
		require.Less(t, i, 100000, "nothing dropped")
	}
	rcv.ResumeReading()
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_ = e.Flush(fctx) // a *FlushError: events were dropped
	got := map[string]int{}
	lines := rcv.Received()
	for _, l := range lines {
		require.Equal(t, lines[0].Conn, l.Conn, "one connection")
		var k string
		var v int
		_, err := fmt.Sscanf(strings.SplitN(l.Data, `,"pad"`, 2)[0], `{"k":%q,"n":%d`, &k, &v)
		require.NoError(t, err, l.Data)
		old, seen := got[k]
		require.False(t, seen && v < old, "key %s went back from %d to %d", k, old, v)
		got[k] = v
	}
	require.Equal(t, last, got, "every key's newest value")
	st := e.Stats()
	require.EqualValues(t, 2, st.StateLines, "a's and b's newest came as state lines")
	require.Zero(t, st.Reconnects)
}
