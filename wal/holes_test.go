package wal

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestHolesPruned: the meta bucket lists every hole past the removal mark,
// a compaction copies the list, and the commit that moves the mark past a
// hole's last deletes it; a salvage still keeps the holes listed.
func TestHolesPruned(t *testing.T) {
	t.Parallel()
	w := openHoles(t, t.TempDir())
	kept := dropHoles(t, w, 2)
	holes := listedHoles(t, w)
	require.Equal(t, gapsBetween(kept), holes, "the list is the numbers neither kept nor removed")

	require.NoError(t, w.Compact())
	require.Equal(t, holes, listedHoles(t, w), "a compaction copies the list")

	require.NoError(t, w.Ack(holes[0].Last+5)) // into the events between the holes
	require.NoError(t, w.FlushAcks(0))
	require.Equal(t, holes[1:], listedHoles(t, w), "the first hole is behind the mark")
	before := w.Stats()
	r, err := w.Repair(errors.New("test: forced repair"))
	require.NoError(t, err)
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	require.Equal(t, before.PendingEvents, w.Len(), "nothing dropped comes back")
	require.Equal(t, holes[1:], listedHoles(t, w), "the salvage lists the hole left")

	require.NoError(t, w.Ack(holes[1].First))
	require.NoError(t, w.FlushAcks(0))
	require.Equal(t, holes[1:], listedHoles(t, w), "the mark inside a hole leaves it listed")
	require.NoError(t, w.Ack(holes[1].Last+1)) // the first event after it
	require.NoError(t, w.FlushAcks(0))
	require.Empty(t, listedHoles(t, w), "both holes are behind the mark")
}

// TestHolesJoin: after a restart nothing is handed out, and a drop past
// what the new process read sweeps across the holes the last one left:
// the list joins them into one.
func TestHolesJoin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := openHoles(t, dir)
	dropHoles(t, w, 2)
	require.Len(t, listedHoles(t, w), 2)
	require.NoError(t, w.Close())

	w = openHoles(t, dir)
	_, err := w.Read(0, 10, 0)
	require.NoError(t, err)
	for i, want := 0, w.Stats().DroppedOldest.Events+30; w.Stats().DroppedOldest.Events < want; i++ {
		_, err := w.Append(t.Context(), fmt.Appendf(nil, "later %06d %0900d", i, 0))
		require.NoError(t, err)
	}
	kept, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	holes := listedHoles(t, w)
	require.Len(t, holes, 1, "one run of dropped numbers")
	require.Equal(t, gapsBetween(kept), holes)
	r, err := w.Repair(errors.New("test: forced repair"))
	require.NoError(t, err)
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	require.Equal(t, uint64(len(kept)), w.Len())
}

// TestListHole: a hole is listed joined with those it touches or adjoins.
func TestListHole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		listed []SeqRange
		add    SeqRange
		want   []SeqRange
	}{
		{"first", nil, SeqRange{5, 9}, []SeqRange{{5, 9}}},
		{"apart", []SeqRange{{1, 3}, {20, 30}}, SeqRange{5, 9}, []SeqRange{{1, 3}, {5, 9}, {20, 30}}},
		{"continues", []SeqRange{{1, 4}}, SeqRange{5, 9}, []SeqRange{{1, 9}}},
		{"adjoins the next", []SeqRange{{10, 12}}, SeqRange{5, 9}, []SeqRange{{5, 12}}},
		{"sweeps across", []SeqRange{{1, 3}, {5, 6}, {8, 9}, {12, 14}, {20, 30}}, SeqRange{4, 13},
			[]SeqRange{{1, 14}, {20, 30}}},
		{"inside", []SeqRange{{1, 30}}, SeqRange{5, 9}, []SeqRange{{1, 30}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, err := bolt.Open(filepath.Join(t.TempDir(), "holes.db"), 0o600, &bolt.Options{NoSync: true})
			require.NoError(t, err)
			defer db.Close()
			require.NoError(t, db.Update(func(tx *bolt.Tx) error {
				mb, err := tx.CreateBucket(metaBucket)
				if err != nil {
					return err
				}
				for _, k := range []string{"\x00aaa", "\x00state:\x00k", "next_sequence"} { // neighbours
					if err := putMetaUint(mb, []byte(k), 1); err != nil {
						return err
					}
				}
				if err := putHoles(mb, tc.listed); err != nil {
					return err
				}
				if err := listHole(mb, tc.add, "test"); err != nil {
					return err
				}
				require.Equal(t, tc.want, holesOf(t, mb))
				return nil
			}))
		})
	}
}

// TestHolesOnePerValue: a caller that reads one event at a time and drops
// after each opens a hole per event read. Every hole is listed and kept
// by a salvage, and the Ack that passes them all deletes them all.
func TestHolesOnePerValue(t *testing.T) {
	t.Parallel()
	w := openHoles(t, t.TempDir())
	i := 0
	dropOne := func() {
		for want := w.Stats().DroppedOldest.Events + 1; w.Stats().DroppedOldest.Events < want; i++ {
			_, err := w.Append(t.Context(), fmt.Appendf(nil, "event %06d %0900d", i, 0))
			require.NoError(t, err)
		}
	}
	dropOne()
	from := uint64(0)
	for range 50 {
		out, err := w.Read(from, 1, 0)
		require.NoError(t, err)
		require.Len(t, out, 1)
		from = out[0].Seq + 1
		dropOne()
	}
	kept, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	holes := listedHoles(t, w)
	require.Len(t, holes, 50)
	require.Equal(t, gapsBetween(kept), holes)

	r, err := w.Repair(errors.New("test: forced repair"))
	require.NoError(t, err)
	require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
	require.Equal(t, holes, listedHoles(t, w))
	require.NoError(t, w.Ack(kept[len(kept)-1].Seq))
	require.NoError(t, w.FlushAcks(0))
	require.Empty(t, listedHoles(t, w))
}

// TestHoleKeysOfV3: a file the previous evspool wrote names its newest hole
// under dropped_hole_first and dropped_hole_last only. A salvage treats it
// as today's list; Open lists it as today's and deletes the two keys.
func TestHoleKeysOfV3(t *testing.T) {
	t.Parallel()
	for _, reopen := range []bool{false, true} {
		t.Run(fmt.Sprintf("reopen=%v", reopen), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w := openHoles(t, dir)
			kept := dropHoles(t, w, 1)
			holes := listedHoles(t, w)
			require.Len(t, holes, 1)
			require.NoError(t, w.locked(func() error {
				return w.metaTx(true, func(mb *bolt.Bucket) error {
					return errors.Join(mb.Delete(holeKey(holes[0].First)),
						putMetaUint(mb, keyHoleFirstV3, holes[0].First), putMetaUint(mb, keyHoleLastV3, holes[0].Last))
				})
			}))
			require.Empty(t, listedHoles(t, w), "as the previous evspool left it")
			if reopen {
				require.NoError(t, w.Close())
				w = openHoles(t, dir)
				require.Equal(t, holes, listedHoles(t, w), "Open lists the hole")
				require.False(t, hasV3Keys(t, w), "Open deletes the two keys")
			}
			before := w.Stats()
			r, err := w.Repair(errors.New("test: forced repair"))
			require.NoError(t, err)
			require.Zero(t, r.Missing, "dropped, not unreadable: %v", r.UnreadableSeqs())
			require.Equal(t, before.DroppedOldest, w.Stats().DroppedOldest)
			es, err := w.Read(0, 0, 0)
			require.NoError(t, err)
			require.Len(t, es, len(kept), "nothing dropped comes back, every kept event does")
			for i, e := range es {
				require.Equal(t, kept[i].Seq, e.Seq)
			}
			require.Equal(t, holes, listedHoles(t, w), "the salvaged file lists the hole")
			require.False(t, hasV3Keys(t, w))
		})
	}
}

func openHoles(t *testing.T, dir string) *WAL {
	t.Helper()
	w, err := Open(dir, &Options{NoSync: true, MaxBytes: MinMaxBytes, OnFull: DropOldest})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// dropHoles appends to w (drop-oldest, the smallest cap) until drops open
// n holes, each after ten events Read handed out, and returns the events
// kept.
func dropHoles(t *testing.T, w *WAL, n int) []Entry {
	t.Helper()
	i := 0
	add := func() {
		_, err := w.Append(t.Context(), fmt.Appendf(nil, "event %06d %0900d", i, 0))
		require.NoError(t, err)
		i++
	}
	for i < 100 {
		add()
	}
	from := uint64(1)
	for range n {
		out, err := w.Read(from, 10, 0)
		require.NoError(t, err)
		require.Len(t, out, 10)
		from = out[9].Seq + 1
		for want := w.Stats().DroppedOldest.Events + 100; w.Stats().DroppedOldest.Events < want; {
			add()
		}
	}
	kept, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	return kept
}

// gapsBetween returns the numbers missing between the first and the last of es.
func gapsBetween(es []Entry) []SeqRange {
	var out []SeqRange
	for i := 1; i < len(es); i++ {
		if es[i].Seq > es[i-1].Seq+1 {
			out = append(out, SeqRange{es[i-1].Seq + 1, es[i].Seq - 1})
		}
	}
	return out
}

// listedHoles returns the holes w's meta bucket lists.
func listedHoles(t *testing.T, w *WAL) (holes []SeqRange) {
	t.Helper()
	require.NoError(t, w.metaTx(false, func(mb *bolt.Bucket) error {
		holes = holesOf(t, mb)
		return nil
	}))
	return holes
}

// holesOf returns the holes mb lists, in key order.
func holesOf(t *testing.T, mb *bolt.Bucket) []SeqRange {
	t.Helper()
	var holes []SeqRange
	c := mb.Cursor()
	for k, v := c.Seek(holePrefix); isHoleName(k); k, v = c.Next() {
		h, err := decodeHole(k, v)
		require.NoError(t, err)
		holes = append(holes, h)
	}
	return holes
}

func hasV3Keys(t *testing.T, w *WAL) (found bool) {
	t.Helper()
	require.NoError(t, w.metaTx(false, func(mb *bolt.Bucket) error {
		found = mb.Get(keyHoleFirstV3) != nil || mb.Get(keyHoleLastV3) != nil
		return nil
	}))
	return found
}
