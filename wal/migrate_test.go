package wal

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/internal/testkit/spooltest"
)

// TestOpenMigratesFormat1 opens a spool written by the code before meta
// values were checksummed (testdata/spool-format1.tar.gz: 300 events of
// 200 bytes, 1..100 acknowledged, 101..120 expired): every figure is kept,
// the values are rewritten checksummed once, and from then on a flipped
// bit in one is damage.
func TestOpenMigratesFormat1(t *testing.T) {
	dir := t.TempDir()
	spooltest.Untar(t, "testdata/spool-format1.tar.gz", dir)
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	require.Nil(t, w.Salvaged())
	st := w.Stats()
	require.EqualValues(t, 180, st.PendingEvents)
	require.EqualValues(t, 121, st.FirstSeq)
	require.EqualValues(t, 300, st.LastSeq)
	require.Equal(t, Counter{Events: 20, Bytes: 20 * 191}, st.Expired)
	last, err := w.Append(context.Background(), []byte("after the migration"))
	require.NoError(t, err)
	require.EqualValues(t, 301, last)
	require.NoError(t, w.Close())

	db, err := bolt.Open(filepath.Join(dir, fileName), 0o600, &bolt.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		var m meta
		state, err := m.load(tx.Bucket(metaBucket))
		require.NoError(t, err)
		require.Equal(t, metaCurrent, state, "migrated to format 2")
		require.EqualValues(t, 302, m.nextSeq)
		return nil
	}))
	require.NoError(t, db.Close())

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.Salvaged())
	require.EqualValues(t, 181, w.Len())
	require.Equal(t, Counter{Events: 20, Bytes: 20 * 191}, w.Stats().Expired)
}
