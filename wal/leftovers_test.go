package wal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestDamagedCopiesBounded: each salvage keeps the damaged file aside, and
// they used to pile up (three salvages, three copies, far beyond a small
// cap). At most two are kept, the newest always; removing one is reported
// in the salvage report (which the emitter logs).
func TestDamagedCopiesBounded(t *testing.T) {
	t.Parallel()
	dir, path := spCorruptSetup(t)
	var removed []string
	for i := 0; i < 4; i++ {
		require.NoError(t, os.WriteFile(path, []byte("not a spool"), 0o600))
		w := spOpen(t, dir, &wal.Options{NoSync: true})
		r := w.Salvaged()
		require.NotNil(t, r)
		require.FileExists(t, r.CorruptPath)
		removed = append(removed, r.RemovedCopies...)
		require.NoError(t, w.Close())
		copies, err := filepath.Glob(path + ".corrupt-*")
		require.NoError(t, err)
		require.LessOrEqual(t, len(copies), 2, "damaged copies kept after salvage %d", i+1)
		require.Contains(t, copies, r.CorruptPath, "the newest copy is kept")
		if len(r.RemovedCopies) > 0 {
			require.Contains(t, r.String(), r.RemovedCopies[0])
		}
	}
	require.Len(t, removed, 2, "the two oldest copies removed, and reported")
	for _, c := range removed {
		require.NoFileExists(t, c)
	}
}

// TestLeftoversRemovedAtOpen: a compaction or salvage cut short leaves its
// work file beside spool.db; neither was renamed over it, so neither holds
// anything spool.db lacks. Open removes them (the package documentation
// always said so for spool.db.compact; it did not happen).
func TestLeftoversRemovedAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	require.NoError(t, w.Close())
	for _, name := range []string{"spool.db.compact", "spool.db.salvage"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), make([]byte, 1<<20), 0o600))
	}
	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.NoFileExists(t, filepath.Join(dir, "spool.db.compact"))
	require.NoFileExists(t, filepath.Join(dir, "spool.db.salvage"))
	require.Nil(t, w.Salvaged())
}
