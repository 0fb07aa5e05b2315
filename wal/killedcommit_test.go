package wal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestKilledCommitThenSalvage: a commit killed at its first fdatasync leaves
// its pages in the file (bbolt writes the data pages, syncs, then the meta
// page) and the marks file's reservation raised; bbolt never reads them. The
// test builds that state exactly: commit A (3,000 events) on a 1 MiB cap,
// then commit B (1,000 events, which needs drop-oldest) with the file's meta
// pages put back as they were before B. The restart must show A whole, and a
// later salvage (one damaged byte) must still show A but for the damaged
// event: not resurrect B, not apply the removal mark B's drop wrote, and
// count the damaged frame's events unreadable. Before the fix, Open handed B's numbers out
// again and salvage took B's stale pages for committed: A lost the events B
// dropped, and B's never-accepted events came back.
func TestKilledCommitThenSalvage(t *testing.T) {
	t.Parallel()
	const nA, nB = 3000, 1000
	opts := &wal.Options{MaxBytes: 1 << 20}
	ctx := context.Background()
	dir := t.TempDir()
	w, err := wal.Open(dir, opts)
	require.NoError(t, err)
	batch := make([][]byte, nA)
	for i := range batch {
		batch[i] = spEvent(uint64(i+1), 200)
	}
	_, err = w.Append(ctx, batch...)
	require.NoError(t, err)
	require.Zero(t, w.Stats().DroppedOldest.Events, "A fits")
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, opts)
	require.NoError(t, err)
	path := filepath.Join(dir, "spool.db")
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	marksBefore, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	batch = make([][]byte, nB)
	for i := range batch {
		batch[i] = []byte(fmt.Sprintf("B-%d-never-accepted-%s", i, bytes.Repeat([]byte{'b'}, 180)))
	}
	_, err = w.Append(ctx, batch...)
	require.NoError(t, err)
	st := w.Stats()
	dropped := st.DroppedOldest.Events
	require.Positive(t, dropped, "B needs drop-oldest")
	require.Zero(t, st.Compactions, "B's commit alone changed the file")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	marks, err := os.ReadFile(filepath.Join(dir, "marks"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	// The crash: B's data pages written, its meta page not; the marks
	// file's reservation raised (before the commit), its removal mark not
	// (after it). Layout (marks.go): reserved u64 | removed u64 | flags
	// u64 | crc32c u32, then the two ack slots at 32 and 48.
	crashed := t.TempDir()
	copy(after[:2*4096], before[:2*4096])
	require.Len(t, marks, 64)
	require.Len(t, marksBefore, 64)
	copy(marks[8:16], marksBefore[8:16])
	copy(marks[32:], marksBefore[32:])
	binary.BigEndian.PutUint32(marks[24:], crc32.Checksum(marks[:24], crc32.MakeTable(crc32.Castagnoli)))
	require.NoError(t, os.WriteFile(filepath.Join(crashed, "spool.db"), after, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(crashed, "marks"), marks, 0o600))

	w, err = wal.Open(crashed, opts)
	require.NoError(t, err)
	require.Nil(t, w.Salvaged())
	es := spReadAll(t, w)
	require.Len(t, es, nA, "restart after the killed commit")
	require.Equal(t, spRange(1, nA), spSeqs(es), "restart after the killed commit")
	// A's events share frames (record.go): the damage takes the frame's.
	lostFrom, lostTo := w.ValueSpan(2000)
	require.Positive(t, lostFrom)
	lost := int(lostTo - lostFrom + 1)
	require.NoError(t, w.Close())

	// One damaged byte in event 2000.
	raw, err := os.ReadFile(filepath.Join(crashed, "spool.db"))
	require.NoError(t, err)
	at := bytes.Index(raw, spEvent(2000, 200))
	require.Positive(t, at)
	raw[at+100] ^= 0x01
	require.NoError(t, os.WriteFile(filepath.Join(crashed, "spool.db"), raw, 0o600))

	w, err = wal.Open(crashed, opts)
	require.NoError(t, err)
	r := w.Salvaged()
	require.NotNil(t, r)
	t.Logf("B dropped %d of A before it was killed; salvage: %v", dropped, r)
	es = spReadAll(t, w)
	var fromA, fromB int
	for _, e := range es {
		if bytes.HasPrefix(e.Data, []byte("B-")) {
			fromB++
			continue
		}
		fromA++
		require.Equal(t, spEvent(e.Seq, 200), e.Data)
	}
	t.Logf("after the salvage: A: %d, B: %d", fromA, fromB)
	require.Zero(t, fromB, "events of the killed commit came back")
	require.Equal(t, nA-lost, fromA, "committed events of A lost")
	require.True(t, slices.Equal(append(spRange(1, lostFrom-1), spRange(lostTo+1, nA)...), spSeqs(es)), "sequence numbers after the salvage")
	require.Equal(t, uint64(lost), r.Missing, "unreadable count")
	require.Zero(t, w.Stats().DroppedOldest.Events, "drops of the killed commit counted")
	last, err := w.Append(ctx, []byte("after"))
	require.NoError(t, err)
	require.Greater(t, last, uint64(nA))
	require.NoError(t, w.Close())
}
