package ledger_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/testkit/spooltest"
	"github.com/evspool/evspool/wal"
)

// TestSpoolOfWalDays: a spool written when package wal kept these records
// itself (testdata/spool-today.tar.gz: events 1..10, 1..2 expired, 5
// refused; reported 1 expired and 2 refused; strikes on 4 with witness 3;
// a receiver note; one dead letter) opens with its strikes, reported
// counts and dead letters, and keeps them through a compaction; the
// receiver note, which nothing reads now, is removed.
func TestSpoolOfWalDays(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	spooltest.Untar(t, "testdata/spool-today.tar.gz", dir)

	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	check := func(w *wal.WAL) {
		t.Helper()
		require.Nil(t, w.Salvaged())
		require.EqualValues(t, 8, w.Len())
		s, err := ledger.LoadStrikes(w)
		require.NoError(t, err)
		require.Equal(t, ledger.Strikes{Seq: 4, Count: 2, WitnessSeq: 3, Witness: []byte("event 3")}, s)
		require.True(t, ledger.ReportedKnown(w))
		total, reported := ledger.Reported(w)
		require.Equal(t, ledger.Losses{ledger.Expired: 2, ledger.Refused: 5}, total)
		require.Equal(t, ledger.Losses{ledger.Expired: 1, ledger.Refused: 2}, reported)
		_, err = os.Lstat(filepath.Join(dir, "receiver"))
		require.ErrorIs(t, err, fs.ErrNotExist, "the receiver note of earlier evspools is removed at open")
		dls, err := ledger.ReadDeadLetters(dir)
		require.NoError(t, err)
		require.Len(t, dls, 1)
		require.Equal(t, uint64(1), dls[0].Seq)
		require.Equal(t, 3, dls[0].Attempts)
		require.True(t, dls[0].Appended.Equal(at) && dls[0].At.Equal(at.Add(time.Second)))
		require.Equal(t, []byte("poison\x00bytes"), dls[0].Data)
	}
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	check(w)
	_, err = w.Append(t.Context(), []byte("event 11"))
	require.NoError(t, err)
	require.NoError(t, w.Ack(3))
	require.NoError(t, w.Compact())
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.EqualValues(t, 8, w.Len())
	s, err := ledger.LoadStrikes(w)
	require.NoError(t, err)
	require.Equal(t, uint64(4), s.Seq, "kept through the compaction")
	total, reported := ledger.Reported(w)
	require.Equal(t, ledger.Losses{ledger.Expired: 2, ledger.Refused: 5}, total)
	require.Equal(t, ledger.Losses{ledger.Expired: 1, ledger.Refused: 2}, reported, "kept through the compaction")
}
