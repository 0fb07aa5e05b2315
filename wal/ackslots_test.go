package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAckSlotsSurviveAKill: each Ack's number is in the marks file before
// Ack returns, in the ack slots, alternately; a process killed in mid-write
// of one slot (the copy's torn slot) leaves the other, one Ack older, and no
// damage is reported.
func TestAckSlotsSurviveAKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{})
	require.NoError(t, err)
	defer w.Close()
	if runtime.GOOS == "linux" {
		require.NotNil(t, w.marks.mapped, "an Ack stores into the mapping")
	}
	ctx := context.Background()
	for i := range 20 {
		_, err := w.Append(ctx, []byte{byte('a' + i)})
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(5))
	require.NoError(t, w.Ack(9))

	// The kill: the files as the page cache holds them, not closed.
	spool, err := os.ReadFile(filepath.Join(dir, fileName))
	require.NoError(t, err)
	marksFile, err := os.ReadFile(filepath.Join(dir, marksFileName))
	require.NoError(t, err)
	require.Len(t, marksFile, marksFileSize)
	var slots []uint64
	for i := range 2 {
		at := ackSlotOff(i)
		n, err := metaUint(keyAcked, marksFile[at:at+ackSlotUsed])
		require.NoError(t, err, "slot %d", i)
		slots = append(slots, n)
	}
	require.ElementsMatch(t, []uint64{5, 9}, slots)

	reopen := func(t *testing.T, marks []byte) ([]uint64, string) {
		killed := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(killed, fileName), spool, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(killed, marksFileName), marks, 0o600))
		var logs bytes.Buffer
		w2, err := Open(killed, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		defer w2.Close()
		es, err := w2.Read(0, 100, 0)
		require.NoError(t, err)
		var seqs []uint64
		for _, e := range es {
			seqs = append(seqs, e.Seq)
		}
		return seqs, logs.String()
	}
	t.Run("whole", func(t *testing.T) {
		seqs, logs := reopen(t, marksFile)
		require.Equal(t, seqRange(10, 20), seqs)
		require.NotContains(t, logs, "checksum")
	})
	t.Run("the last slot torn", func(t *testing.T) {
		torn := bytes.Clone(marksFile)
		at := ackSlotOff(0)
		if slots[1] == 9 {
			at = ackSlotOff(1)
		}
		binary.BigEndian.PutUint32(torn[at+4:], 0) // half of its number written
		seqs, logs := reopen(t, torn)
		require.Equal(t, seqRange(6, 20), seqs, "the other slot's Ack")
		require.NotContains(t, logs, "checksum")
	})
}

// TestAckSlotFault: the marks file cut short under the mapping makes the
// next store fault (SIGBUS); the fault is caught, the slot written with
// pwrite(2) instead, from then on, and nothing is lost.
func TestAckSlotFault(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the marks file is mapped on Linux only")
	}
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 10 {
		_, err := w.Append(ctx, []byte{byte('a' + i)})
		require.NoError(t, err)
	}
	require.NotNil(t, w.marks.mapped)
	require.NoError(t, os.Truncate(filepath.Join(dir, marksFileName), 0))
	require.NoError(t, w.Ack(3), "the fault is an Ack's write error no more")
	require.Nil(t, w.marks.mapped, "written with pwrite from the fault on")
	require.NoError(t, w.Ack(4))
	buf, err := os.ReadFile(filepath.Join(dir, marksFileName))
	require.NoError(t, err)
	var m marks
	m.parse(buf)
	require.EqualValues(t, 4, m.removed)
	require.NoError(t, w.Close())

	w, err = Open(dir, &Options{})
	require.NoError(t, err)
	defer w.Close()
	es, err := w.Read(0, 100, 0)
	require.NoError(t, err)
	require.Len(t, es, 6)
	require.EqualValues(t, 5, es[0].Seq)
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}
