package wal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestInspect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for _, e := range []string{"one", "two", "three"} {
		_, err := w.Append(context.Background(), []byte(e))
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(1))

	_, _, err = wal.Inspect(dir, 0)
	require.ErrorIs(t, err, wal.ErrLocked, "a spool in use is not read under its owner")
	require.NoError(t, w.Close())

	before, err := os.ReadFile(filepath.Join(dir, "spool.db"))
	require.NoError(t, err)
	st, entries, err := wal.Inspect(dir, 5)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.PendingEvents)
	require.EqualValues(t, len("two")+len("three"), st.PendingBytes)
	require.EqualValues(t, 2, st.FirstSeq)
	require.EqualValues(t, 3, st.LastSeq)
	require.Len(t, entries, 2)
	require.Equal(t, "two", string(entries[0].Data))
	after, err := os.ReadFile(filepath.Join(dir, "spool.db"))
	require.NoError(t, err)
	require.Equal(t, before, after, "Inspect changes nothing")

	require.NoError(t, os.Truncate(filepath.Join(dir, "spool.db"), 4096))
	_, _, err = wal.Inspect(dir, 0)
	require.ErrorIs(t, err, wal.ErrCorrupt)
	_, err = os.Stat(filepath.Join(dir, "spool.db"))
	require.NoError(t, err, "Inspect never salvages")

	_, _, err = wal.Inspect(filepath.Join(dir, "absent"), 0)
	require.Error(t, err)
}
