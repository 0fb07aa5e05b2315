package wal_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// Stats.FileBytes is the file's size after every commit, though fileSize
// looks at the file only when bbolt may have grown it: through growth, acks,
// compaction and reopening.
func TestFileBytesFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true, MaxBytes: 64 << 20})
	require.NoError(t, err)
	onDisk := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, "spool.db"))
		require.NoError(t, err)
		return fi.Size()
	}
	ctx := context.Background()
	grew := 0
	last := onDisk()
	for i := range 400 {
		ev := bytes.Repeat([]byte{'x'}, 100+i*37%9000) // up to two pages and more
		seq, err := w.Append(ctx, ev)
		require.NoError(t, err)
		if i%150 == 149 {
			require.NoError(t, w.Ack(seq))
		}
		require.Equal(t, onDisk(), w.Stats().FileBytes, "after append %d", i)
		if s := onDisk(); s != last {
			grew++
			last = s
		}
	}
	require.Greater(t, grew, 2, "the file grew several times")
	require.NoError(t, w.Compact())
	require.Equal(t, onDisk(), w.Stats().FileBytes, "after compaction")
	_, err = w.Append(ctx, bytes.Repeat([]byte{'y'}, 50_000))
	require.NoError(t, err)
	require.Equal(t, onDisk(), w.Stats().FileBytes, "after a large append")
	require.NoError(t, w.Close())
	require.Equal(t, onDisk(), w.Stats().FileBytes, "after Close")
}

// A compacted copy packs its leaves as the live spool does, so it is no
// larger than the file it replaces and, at the cap, appends under DropOldest
// compact now and then, not at every commit.
func TestCompactedCopyIsPacked(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: wal.DropOldest})
	require.NoError(t, err)
	defer w.Close()
	for range 2000 {
		_, err := w.Append(context.Background(), bytes.Repeat([]byte{'e'}, 1000))
		require.NoError(t, err)
	}
	st := w.Stats()
	require.Positive(t, st.DroppedOldest.Events, "the cap was reached")
	require.Less(t, st.Compactions, uint64(20), "compactions while appending 2,000 events at the cap")
	before := st.FileBytes
	require.NoError(t, w.Compact())
	require.LessOrEqual(t, w.Stats().FileBytes, before, "a compacted copy is no larger than the file")
}
