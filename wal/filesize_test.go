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
		if i%3 == 0 {
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
