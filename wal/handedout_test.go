package wal_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestDropOldestKeepsWhatReadHandedOut: events a Read returned may be on
// their way to a receiver; drop-oldest drops the oldest after them, so that
// an event is never both handed on and counted dropped. Acknowledging the
// kept ones then removes them as delivered, across the hole the drops left,
// and a later Read goes on after the hole.
func TestDropOldestKeepsWhatReadHandedOut(t *testing.T) {
	t.Parallel()
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: wal.DropOldest})
	require.NoError(t, err)
	defer w.Close()
	ev := func(i int) []byte { return fmt.Appendf(nil, "event %06d %0900d", i, 0) }
	i := 0
	for ; i < 100; i++ {
		_, err := w.Append(t.Context(), ev(i))
		require.NoError(t, err)
	}
	out, err := w.Read(1, 10, 0)
	require.NoError(t, err)
	require.Len(t, out, 10)
	for ; w.Stats().DroppedOldest.Events < 200; i++ {
		_, err := w.Append(t.Context(), ev(i))
		require.NoError(t, err)
	}
	st := w.Stats()
	require.Equal(t, uint64(1), st.FirstSeq, "the events handed out stay")
	require.Equal(t, uint64(i), st.DroppedOldest.Events+st.PendingEvents, "every event pending or dropped, once")
	next, err := w.Read(11, 1, 0)
	require.NoError(t, err)
	require.Len(t, next, 1)
	require.Greater(t, next[0].Seq, uint64(11), "events 11 on were dropped: the read goes on after the hole")
	require.Equal(t, ev(int(next[0].Seq)-1), next[0].Data)

	require.NoError(t, w.Ack(10))
	require.Equal(t, st.PendingEvents-10, w.Len())
	require.Equal(t, next[0].Seq, w.FirstSeq(), "the hole is behind the head now")
	require.Equal(t, st.DroppedOldest, w.Stats().DroppedOldest, "acknowledged, not dropped")
}

// TestSalvageKeepsTheHole: a salvage after drop-oldest opened a hole
// behind the events Read handed out neither brings the dropped events back
// (their values may linger in free pages) nor counts them unreadable:
// they were counted dropped.
func TestSalvageKeepsTheHole(t *testing.T) {
	t.Parallel()
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: wal.DropOldest})
	require.NoError(t, err)
	defer w.Close()
	ev := func(i int) []byte { return fmt.Appendf(nil, "event %06d %0900d", i, 0) }
	i := 0
	for ; i < 100; i++ {
		_, err := w.Append(t.Context(), ev(i))
		require.NoError(t, err)
	}
	_, err = w.Read(1, 10, 0)
	require.NoError(t, err)
	for ; w.Stats().DroppedOldest.Events < 200; i++ {
		_, err := w.Append(t.Context(), ev(i))
		require.NoError(t, err)
	}
	before := w.Stats()
	r, err := w.Repair(fmt.Errorf("test: forced repair"))
	require.NoError(t, err)
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	after := w.Stats()
	require.Equal(t, before.PendingEvents, after.PendingEvents, "nothing dropped comes back")
	require.Equal(t, before.DroppedOldest, after.DroppedOldest)
	require.Zero(t, after.Unreadable)
	out, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	require.Len(t, out, int(before.PendingEvents))
	for _, e := range out[10:] {
		require.Greater(t, e.Seq, uint64(10+before.DroppedOldest.Events), "event %d was dropped", e.Seq)
	}
}
