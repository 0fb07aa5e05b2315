package wal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStrikesSurviveReopenAndCompaction(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(t.Context(), []byte("a"), []byte("b"), []byte("poison"), []byte("d"))
	require.NoError(t, err)
	s, err := w.Strikes()
	require.NoError(t, err)
	assert.Zero(t, s, "none yet")
	want := Strikes{Seq: 3, Count: 2, WitnessSeq: 2, Witness: []byte("b")}
	require.NoError(t, w.SetStrikes(want))
	require.NoError(t, w.Ack(2))
	require.NoError(t, w.Compact())
	require.NoError(t, w.Close())

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	s, err = w.Strikes()
	require.NoError(t, err)
	assert.Equal(t, want, s)
	require.NoError(t, w.Ack(3))
	s, err = w.Strikes()
	require.NoError(t, err)
	assert.Zero(t, s, "the suspect left the spool")
	require.NoError(t, w.SetStrikes(Strikes{}))
}

func TestStrikesDamagedRecordIsNone(t *testing.T) {
	_, err := decodeStrikes([]byte{1, 2, 3})
	assert.ErrorIs(t, err, errStrikesFormat)
	s := Strikes{Seq: 9, Count: 1}
	got, err := decodeStrikes(s.encode())
	require.NoError(t, err)
	assert.Equal(t, uint64(9), got.Seq)
}
