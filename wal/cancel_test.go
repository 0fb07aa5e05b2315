package wal_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// cancelAfter is a context whose Err turns to Canceled after n calls: it
// ends in the middle of the start-up scan, wherever that is.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestOpenCancelledDuringScan(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	batch := make([][]byte, 5000)
	for i := range batch {
		batch[i] = []byte("event")
	}
	_, err = w.Append(context.Background(), batch...)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(2) // the scan looks every 1024 records: it stops at the third look
	_, err = wal.Open(dir, &wal.Options{NoSync: true, Context: ctx, LockTimeout: time.Millisecond})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, wal.ErrCorrupt, "a cancelled Open salvages nothing")

	w, err = wal.Open(dir, &wal.Options{NoSync: true, LockTimeout: time.Millisecond})
	require.NoError(t, err, "the cancelled Open released the spool")
	defer w.Close()
	require.Nil(t, w.Salvaged())
	require.EqualValues(t, 5000, w.Stats().PendingEvents)
}
