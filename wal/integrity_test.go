package wal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// Five kinds of damage, each a spool damaged as a flipped bit (or a
// cut with fsync off) leaves it. In each, Open must report the damage
// (Salvaged), keep every pending event the damage did not touch, number on
// above everything handed out, and new appends must survive a reopen.

// icWrite appends events first..last (200 bytes each) in batches of 10.
func icWrite(t testing.TB, w *wal.WAL, first, last uint64) {
	t.Helper()
	for i := first; i <= last; i += 10 {
		var batch [][]byte
		for j := i; j < i+10 && j <= last; j++ {
			batch = append(batch, spEvent(j, 200))
		}
		_, err := w.Append(context.Background(), batch...)
		require.NoError(t, err)
	}
}

// icAfter appends n events to w, closes it, reopens the spool and checks
// that want (then the new events) are pending, in order.
func icAfter(t *testing.T, dir string, w *wal.WAL, want []uint64, n int) {
	t.Helper()
	require.Equal(t, want, spSeqs(spReadAll(t, w)))
	last := uint64(0)
	for i := range n {
		seq, err := w.Append(context.Background(), []byte{'n', byte(i)})
		require.NoError(t, err)
		require.Greater(t, seq, last)
		if len(want) > 0 {
			require.Greater(t, seq, want[len(want)-1], "sequence numbers went back")
		}
		last = seq
	}
	require.Equal(t, uint64(len(want)+n), w.Len())
	require.Len(t, spReadAll(t, w), len(want)+n, "Len and Read disagree")
	require.NoError(t, w.Close())
	w2 := spOpen(t, dir, &wal.Options{NoSync: true})
	defer w2.Close()
	require.Nil(t, w2.Salvaged(), "the spool is sound after the salvage")
	es := spReadAll(t, w2)
	require.Len(t, es, len(want)+n, "events lost across a clean restart")
	require.Equal(t, want, spSeqs(es[:len(want)]))
	require.Equal(t, last, es[len(es)-1].Seq)
}

// TestIntegrityLiveRemovedThrough: case 1, one bit of the live
// removed_through value. It must not delete the 100 pending events.
func TestIntegrityLiveRemovedThrough(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	icWrite(t, w, 1, 100)
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		b[icMetaElems(t, b)["removed_through"].val] ^= 0x01 // +2^56
	})
	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.NotNil(t, w.Salvaged(), "damage not reported")
	t.Logf("salvage: %v", w.Salvaged())
	icAfter(t, dir, w, spRange(1, 100), 5)
}

// TestIntegrityStaleRemovedThrough: case 1, one bit of a stale copy of
// removed_through, met by the salvage of a record's damage. The salvage
// must not take it for the mark.
func TestIntegrityStaleRemovedThrough(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	icWrite(t, w, 1, 3000)
	require.NoError(t, w.Ack(1000))
	require.NoError(t, w.Close())
	path := filepath.Join(dir, "spool.db")
	icDamage(t, path, func(b []byte) {
		stale := icStaleCopies(t, b, "removed_through")
		require.NotEmpty(t, stale, "no stale copy in the file")
		for _, at := range stale {
			b[at+5] ^= 0x40 // +4,194,304 (2^22)
		}
		i := bytes.LastIndex(b, spEvent(2500, 200))
		b[i+100] ^= 0x10
	})
	w = spOpen(t, dir, &wal.Options{NoSync: true})
	r := w.Salvaged()
	require.NotNil(t, r, "damage not reported")
	t.Logf("salvage: %v", r)
	require.Equal(t, uint64(1999), r.Recovered)
	require.Equal(t, uint64(1), r.Missing)
	icAfter(t, dir, w, append(spRange(1001, 2499), spRange(2501, 3000)...), 5)
}

// TestIntegrityEventsBucketFlag: case 2, the events bucket's element in the
// root page lost its bucket flag. bbolt then says "incompatible value" at
// every Open: that is damage, salvaged.
func TestIntegrityEventsBucketFlag(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	icWrite(t, w, 1, 300)
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		e := icElems(b, icRootPage(t, b))["events"]
		b[e.hdr] &^= 0x01
	})
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err, "Open must salvage, not fail")
	require.NotNil(t, w.Salvaged(), "damage not reported")
	icAfter(t, dir, w, spRange(1, 300), 5)
}

// TestIntegrityMetaValueFlag: case 2, a meta value flagged as a bucket.
// bbolt refuses every Put on it (incompatible value): every commit failed.
func TestIntegrityMetaValueFlag(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	icWrite(t, w, 1, 100)
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		b[icMetaElems(t, b)["expired_bytes"].hdr] |= 0x01
	})
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("first"))
	require.NoError(t, err, "commit after Open")
	require.NotNil(t, w.Salvaged(), "damage not reported")
	require.Equal(t, uint64(101), w.Len())
	require.NoError(t, w.Close())
	w = spOpen(t, dir, &wal.Options{NoSync: true})
	icAfter(t, dir, w, append(spRange(1, 100), 101), 5)
}

// TestIntegrityMetaKeySize: case 3, one bit of an inline meta key's size
// (21 -> 2^27). The first commit cost seconds and GiB; it must cost
// neither, and the damage must be reported at Open.
func TestIntegrityMetaKeySize(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	icWrite(t, w, 1, 100)
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		e := icMetaElems(t, b)["dropped_oldest_events"]
		require.Equal(t, uint32(21), binary.LittleEndian.Uint32(b[e.hdr+8:]))
		binary.LittleEndian.PutUint32(b[e.hdr+8:], 21|1<<27)
	})
	start := time.Now()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	commitStart := time.Now()
	_, err = w.Append(context.Background(), []byte("first"))
	took := time.Since(commitStart)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("open %v; first commit %v, %d KiB allocated, err %v", commitStart.Sub(start), took, alloc>>10, err)
	require.NoError(t, err)
	require.Less(t, alloc, uint64(8<<20), "first commit allocated too much")
	require.NotNil(t, w.Salvaged(), "damage not reported")
	icAfter(t, dir, w, append(spRange(1, 100), 101), 5)
}

// TestIntegrityMarksNewerThanFile: case 4, fsync off: the marks file was
// written back after spool.db's last commits were not. Open must not hand
// out numbers already used (and acknowledged): the next Open would delete
// the new events as acknowledged.
func TestIntegrityMarksNewerThanFile(t *testing.T) {
	for _, acked := range []uint64{150, 120} {
		t.Run(fmt.Sprintf("acknowledged through %d", acked), func(t *testing.T) {
			dir := t.TempDir()
			path, marks := filepath.Join(dir, "spool.db"), filepath.Join(dir, "marks")
			w := spOpen(t, dir, &wal.Options{NoSync: true})
			icWrite(t, w, 1, 100)
			require.NoError(t, w.Close())
			old, err := os.ReadFile(path)
			require.NoError(t, err)

			w = spOpen(t, dir, &wal.Options{NoSync: true})
			icWrite(t, w, 101, 150)
			require.NoError(t, w.Ack(acked))
			cut, err := os.ReadFile(marks) // as the cut left it: not lowered by Close
			require.NoError(t, err)
			require.NoError(t, w.Close())
			require.NoError(t, os.WriteFile(path, old, 0o600))
			require.NoError(t, os.WriteFile(marks, cut, 0o600))

			w = spOpen(t, dir, &wal.Options{NoSync: true})
			// 1..100 were acknowledged (the marks file says so): gone.
			icAfter(t, dir, w, nil, 10)
			w = spOpen(t, dir, &wal.Options{NoSync: true})
			defer w.Close()
			es := spReadAll(t, w)
			require.Len(t, es, 10)
			require.Greater(t, es[0].Seq, uint64(150), "numbers handed out again")
		})
	}
}

// TestIntegrityMarksBitFlip: a flipped bit in the marks file fails its
// check: the numbers or the ack slot it is in are not used (not a removal
// mark 2^40 higher, which would drop every pending event), spool.db's
// and the other slot's are.
func TestIntegrityMarksBitFlip(t *testing.T) {
	for bit := 3; bit < 64*8; bit += 7 { // every byte, a different bit each
		dir := t.TempDir()
		w := spOpen(t, dir, &wal.Options{NoSync: true})
		icWrite(t, w, 1, 30)
		require.NoError(t, w.Ack(10))
		require.NoError(t, w.Close())
		icDamage(t, filepath.Join(dir, "marks"), func(b []byte) { b[bit/8] ^= 1 << (bit % 8) })
		w = spOpen(t, dir, &wal.Options{NoSync: true})
		require.Equal(t, spRange(11, 30), spSeqs(spReadAll(t, w)), "bit %d", bit)
		last, err := w.Append(context.Background(), []byte("x"))
		require.NoError(t, err)
		require.Greater(t, last, uint64(30))
		require.NoError(t, w.Close())
	}
}

// TestIntegrityMetaPageFlip: a flipped bit in a meta page of a spool closed
// cleanly. bbolt would fall back on the other meta page, one commit older,
// and the last commit's events would be gone without a word; no commit was
// under way (the marks file says the spool was closed), so it is damage.
func TestIntegrityMetaPageFlip(t *testing.T) {
	for _, page := range []int{0, 1} {
		dir := t.TempDir()
		w := spOpen(t, dir, &wal.Options{NoSync: true})
		icWrite(t, w, 1, 100)
		require.NoError(t, w.Close())
		icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) { b[page*icPage+40] ^= 0x04 })
		w = spOpen(t, dir, &wal.Options{NoSync: true})
		require.NotNil(t, w.Salvaged(), "meta page %d", page)
		icAfter(t, dir, w, spRange(1, 100), 3)
	}
}
