package wal

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDirectorySyncs: a file's fsync does not make its directory entry
// durable. Open must fsync the parent of each directory it creates, and the
// spool directory once spool.db and marks are created in it; with NoSync it
// syncs nothing. (internal/testkit/powercut checks the same against a simulated
// power loss.)
func TestDirectorySyncs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var synced []string
	watch := func(dir string, d *os.File) error {
		mu.Lock()
		synced = append(synced, dir)
		mu.Unlock()
		return d.Sync()
	}

	root := t.TempDir()
	dir := filepath.Join(root, "a", "spool")
	w, err := Open(dir, &Options{fsyncDir: watch})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("x"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Contains(t, synced, root, "the new directory a")
	require.Contains(t, synced, filepath.Join(root, "a"), "the new directory spool")
	require.GreaterOrEqual(t, countOf(synced, dir), 2, "marks and spool.db created: %v", synced)

	synced = nil
	w, err = Open(filepath.Join(root, "b"), &Options{NoSync: true, fsyncDir: watch})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Empty(t, synced, "NoSync syncs nothing")
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
