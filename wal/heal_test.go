package wal_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/wal"
)

// spFlipEvent flips a bit of event n's bytes in the open spool's file, under
// bbolt's feet, so that Read finds the damage.
func spFlipEvent(t *testing.T, w *wal.WAL, n uint64, size int) {
	t.Helper()
	raw, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	at := bytes.Index(raw, spEvent(n, size))
	require.Positive(t, at)
	f, err := os.OpenFile(w.Path(), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{raw[at+size/2] ^ 0x01}, int64(at+size/2))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestRepairFailsThenHeals: a salvage that fails (here for a file size
// limit, RLIMIT_FSIZE, too small for the fresh file; a full disk does the
// same) must not leave the spool unusable for the life of the process. Once
// the cause is gone, appends work and the next Repair succeeds, without
// Close and Open. Before the fix every call returned the failed repair's
// error until Close.
func TestRepairFailsThenHeals(t *testing.T) {
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	ctx := context.Background()
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = spEvent(uint64(i+1), 300)
	}
	// One Append an event: each a record of its own (the damage of a
	// frame, which holds a commit's events, is TestDamagedFrame's).
	for _, e := range batch {
		_, err := w.Append(ctx, e)
		require.NoError(t, err)
	}
	spFlipEvent(t, w, 25, 300)
	_, err := w.Read(1, 0, 0)
	require.ErrorIs(t, err, wal.ErrCorrupt)

	// Go ignores SIGXFSZ: a write past the limit fails with EFBIG.
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &old))
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 4096, Max: old.Max}))
	_, rerr := w.Repair(err)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &old))
	require.Error(t, rerr, "the salvage cannot write its file")
	t.Logf("failed repair: %v", rerr)

	last, err := w.Append(ctx, spEvent(51, 300))
	require.NoError(t, err, "appends once the cause is gone")
	require.Equal(t, uint64(51), last)
	r, err := w.Repair(errors.New("retry"))
	require.NoError(t, err, "the repair once the cause is gone")
	require.Equal(t, uint64(50), r.Recovered)
	require.Equal(t, uint64(1), r.Missing)
	es := spReadAll(t, w)
	require.Equal(t, append(spRange(1, 24), spRange(26, 51)...), spSeqs(es))
	_, err = w.Append(ctx, []byte("after"))
	require.NoError(t, err)
}

// TestBrokenSpoolHeals: a spool left without its database (a repair that
// could not even reopen the file) returns the error for a while, then is
// opened again by itself, with what the directory holds.
func TestBrokenSpoolHeals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	ctx := context.Background()
	_, err := w.Append(ctx, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(w.Path()))
	_, err = w.Repair(errors.New("test"))
	require.Error(t, err)
	_, err = w.Append(ctx, []byte("y"))
	require.Error(t, err, "broken right after")
	require.NotErrorIs(t, err, wal.ErrClosed)

	var last uint64
	require.Eventually(t, func() bool {
		last, err = w.Append(ctx, []byte("z"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the spool never healed")
	require.Greater(t, last, uint64(1), "numbering goes on above what was handed out")
	require.Equal(t, uint64(1), w.Stats().Heals)
	es := spReadAll(t, w)
	require.Len(t, es, 1)
	require.Equal(t, "z", string(es[0].Data))
}
