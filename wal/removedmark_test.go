package wal

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// A torn file (fsync off, power loss) can pair a meta bucket from a newer
// commit with event leaves from an older one: entries at or below the
// file's removed-through number. Open must remove them, not count them as
// pending while Read hides them (a drain would then wait for them forever).
func TestOpenAppliesFilesRemovedThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	for _, e := range []string{"a", "b", "c", "d", "e"} {
		_, err := w.Append(context.Background(), []byte(e))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())

	// The meta bucket says 3 were removed; the events are all still there.
	// The marks file is older still (nothing removed).
	db, err := bolt.Open(filepath.Join(dir, fileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return putMetaUint(tx.Bucket(metaBucket), keyRemovedSeq, 3)
	}))
	require.NoError(t, db.Close())
	require.NoError(t, os.Remove(filepath.Join(dir, marksFileName)))

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.EqualValues(t, 2, w.Len(), "what Len counts, Read must return")
	es, err := w.Read(0, 10, 0)
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.EqualValues(t, 4, es[0].Seq)
	require.EqualValues(t, 4, w.FirstSeq())
}
