package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Refused events are counted in the spool with the other losses: they
// survive a restart, and what was reported of them is kept beside.
func TestCountRefusedIsALedgerLoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.True(t, ledger.ReportedKnown(w), "a new spool lost nothing: nothing to take as reported")
	require.NoError(t, w.CountRefused(2))
	require.False(t, ledger.ReportedKnown(w), "losses, and nothing recorded of what was reported")
	require.NoError(t, w.CountRefused(0))
	require.NoError(t, w.CountRefused(3))
	require.EqualValues(t, 5, w.Stats().Refused)
	require.NoError(t, ledger.MarkReported(w, ledger.Losses{ledger.Refused: 2}))
	require.True(t, ledger.ReportedKnown(w))
	require.NoError(t, ledger.MarkReported(w, ledger.Losses{ledger.Refused: 1}), "never lowered")
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	total, reported := ledger.Reported(w)
	require.Equal(t, ledger.Losses{ledger.Refused: 5}, total)
	require.Equal(t, ledger.Losses{ledger.Refused: 2}, reported, "3 left for a process to report")
	require.True(t, ledger.ReportedKnown(w))
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.CountRefused(1), wal.ErrClosed)
	require.ErrorIs(t, ledger.MarkReported(w, ledger.Losses{ledger.Refused: 5}), wal.ErrClosed)
}

// TestMarkReportedRecordsZeros: on a spool that records nothing yet, a
// MarkReported of nothing still records the counts, so that the next
// process knows they were kept (and reports what is lost meanwhile).
func TestMarkReportedRecordsZeros(t *testing.T) {
	t.Parallel()
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, ledger.MarkReported(w, ledger.Losses{}))
	require.True(t, ledger.ReportedKnown(w))
	_, reported := ledger.Reported(w)
	require.Zero(t, reported)
}
