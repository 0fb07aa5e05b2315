package wal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestExpireCountsAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for _, e := range []string{"one", "two", "three", "four"} {
		_, err := w.Append(context.Background(), []byte(e))
		require.NoError(t, err)
	}

	gone, err := w.Expire(2)
	require.NoError(t, err)
	require.Equal(t, wal.Counter{Events: 2, Bytes: uint64(len("one") + len("two"))}, gone)
	gone, err = w.Expire(1)
	require.NoError(t, err)
	require.Zero(t, gone, "expiring what is gone is a no-op")
	require.NoError(t, w.Ack(3))

	st := w.Stats()
	require.Equal(t, wal.Counter{Events: 2, Bytes: 6}, st.Expired)
	require.EqualValues(t, 1, st.Acked, "expired events are not counted as acknowledged")
	require.EqualValues(t, 1, st.PendingEvents)
	require.EqualValues(t, 4, st.FirstSeq)
	es, err := w.Read(0, 10, 0)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "four", string(es[0].Data))
	require.NoError(t, w.Close())
	_, err = w.Expire(4)
	require.ErrorIs(t, err, wal.ErrClosed)

	st, _, err = wal.Inspect(dir, 0)
	require.NoError(t, err)
	require.Equal(t, wal.Counter{Events: 2, Bytes: 6}, st.Expired, "inspect reads the count from the file")

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	gone, err = w.Expire(4)
	require.NoError(t, err)
	require.EqualValues(t, 1, gone.Events)
	require.Equal(t, wal.Counter{Events: 3, Bytes: 10}, w.Stats().Expired, "the count survives a restart")
	require.Zero(t, w.Stats().PendingEvents)
}

// Entries acknowledged but not yet deleted from the file (their deletion
// waits for the next commit) are not expired again: Expire counts only what
// was still pending, and the counters stay whole.
func TestExpireAfterDeferredAck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	for _, e := range []string{"a", "b", "old", "c"} {
		_, err := w.Append(context.Background(), []byte(e))
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(2)) // hidden, still in the file
	gone, err := w.Expire(3)
	require.NoError(t, err)
	require.Equal(t, wal.Counter{Events: 1, Bytes: uint64(len("old"))}, gone)
	st := w.Stats()
	require.Equal(t, wal.Counter{Events: 1, Bytes: 3}, st.Expired)
	require.EqualValues(t, 1, st.PendingEvents)
	require.EqualValues(t, 1, st.PendingBytes)
	require.EqualValues(t, 4, st.FirstSeq)
	require.NoError(t, w.Close())
	st, _, err = wal.Inspect(dir, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.PendingEvents, "the file agrees")
}
