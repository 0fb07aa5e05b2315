package wal_test

import (
	"fmt"
	"path/filepath"
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

// TestSalvageKeepsEveryHole: two holes drop-oldest opened behind events
// Read handed out, separated by handed-out events no Ack has removed. A
// salvage brings neither hole's events back and counts neither unreadable
// (they were counted dropped, once), and brings back every kept event, in
// order.
func TestSalvageKeepsEveryHole(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: wal.DropOldest})
	kept := dropTwoHoles(t, w)
	before := w.Stats()

	r, err := w.Repair(fmt.Errorf("test: forced repair"))
	require.NoError(t, err)
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	after := w.Stats()
	require.Equal(t, before.DroppedOldest, after.DroppedOldest, "counted dropped once")
	require.Zero(t, after.Unreadable)
	got := spReadAll(t, w)
	require.Equal(t, spSeqs(kept), spSeqs(got), "every kept event back, nothing of either hole")
	for j, e := range got {
		require.Equal(t, kept[j].Data, e.Data, "event %d", e.Seq)
	}
}

// TestSalvageFindsEveryHoleInCopies: TestSalvageKeepsEveryHole with the
// meta bucket in force damaged, so that the salvage takes the holes from
// the copies it finds in the file's pages.
func TestSalvageFindsEveryHoleInCopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: wal.DropOldest})
	kept := dropTwoHoles(t, w)
	before := w.Stats()
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		e := icMetaElems(t, b)["next_sequence"]
		b[e.val+e.vsize-1] ^= 0xff // its checksum
	})

	w = spOpen(t, dir, &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: wal.DropOldest})
	r := w.Salvaged()
	require.NotNil(t, r, "damage not found")
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	after := w.Stats()
	require.Equal(t, before.DroppedOldest, after.DroppedOldest, "counted dropped once")
	require.Zero(t, after.Unreadable)
	require.Equal(t, spSeqs(kept), spSeqs(spReadAll(t, w)), "every kept event back, nothing of either hole")
}

// dropTwoHoles appends to w (drop-oldest, the smallest cap) until drops
// open two holes, each behind ten events Read handed out, and returns the
// events kept: 1-10, ten after the first hole, and those after the second.
// Every event appended is kept or counted dropped.
func dropTwoHoles(t *testing.T, w *wal.WAL) []wal.Entry {
	t.Helper()
	i := 0
	appendUntil := func(dropped uint64) {
		for ; i < 100 || w.Stats().DroppedOldest.Events < dropped; i++ {
			_, err := w.Append(t.Context(), fmt.Appendf(nil, "event %06d %0900d", i, 0))
			require.NoError(t, err)
		}
	}
	appendUntil(0)
	_, err := w.Read(1, 10, 0)
	require.NoError(t, err)
	appendUntil(100) // the first hole, after event 10
	out, err := w.Read(11, 10, 0)
	require.NoError(t, err)
	require.Len(t, out, 10)
	appendUntil(200) // the second, after the ten read past the first

	kept := spReadAll(t, w)
	require.Greater(t, len(kept), 21)
	require.Greater(t, kept[10].Seq, uint64(11), "the first hole")
	require.Greater(t, kept[20].Seq, kept[19].Seq+1, "the second hole")
	require.Equal(t, uint64(i-len(kept)), w.Stats().DroppedOldest.Events, "every event kept or dropped")
	return kept
}
