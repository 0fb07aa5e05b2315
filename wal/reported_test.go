package wal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// Refused events are counted in the spool's ledger with the other losses:
// they survive a restart, and what was reported of them is kept beside.
func TestCountRefusedIsALedgerLoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, w.CountRefused(2))
	require.NoError(t, w.CountRefused(0))
	require.NoError(t, w.CountRefused(3))
	require.EqualValues(t, 5, w.Stats().Refused)
	require.NoError(t, w.MarkReported(wal.Losses{Refused: 2}))
	require.NoError(t, w.MarkReported(wal.Losses{Refused: 1}), "never lowered")
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	total, reported := w.Reported()
	require.Equal(t, wal.Losses{Refused: 5}, total)
	require.Equal(t, wal.Losses{Refused: 2}, reported, "3 left for a process to report")
	require.True(t, w.ReportedKnown())
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.CountRefused(1), wal.ErrClosed)
}
