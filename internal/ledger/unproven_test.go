package ledger_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// The count of events acknowledged without proof only grows, and a reopened
// spool keeps it.
func TestUnprovenCountSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	n, err := ledger.Unproven(w)
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, ledger.AddUnproven(w, 105))
	require.NoError(t, ledger.AddUnproven(w, 0))
	require.NoError(t, ledger.AddUnproven(w, 2))
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	n, err = ledger.Unproven(w)
	require.NoError(t, err)
	require.EqualValues(t, 107, n)
}
