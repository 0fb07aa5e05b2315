package ledger

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestStrikesSurviveReopenAndCompaction(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(t.Context(), []byte("a"), []byte("b"), []byte("poison"), []byte("d"))
	require.NoError(t, err)
	s, err := LoadStrikes(w)
	require.NoError(t, err)
	assert.Zero(t, s, "none yet")
	want := Strikes{Seq: 3, Count: 2, WitnessSeq: 2, Witness: []byte("b")}
	require.NoError(t, SaveStrikes(w, want))
	require.NoError(t, w.Ack(2))
	require.NoError(t, w.Compact())
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	s, err = LoadStrikes(w)
	require.NoError(t, err)
	assert.Equal(t, want, s)
	require.NoError(t, w.Ack(3))
	s, err = LoadStrikes(w)
	require.NoError(t, err)
	assert.Equal(t, Strikes{WitnessSeq: 2, Witness: []byte("b")}, s, "the suspect left the spool, the witness is kept")
	require.NoError(t, SaveStrikes(w, Strikes{}))
	v, err := w.Value(keyStrikes)
	require.NoError(t, err)
	assert.Nil(t, v, "the zero Strikes clears the record")
}

func TestStrikesDamagedRecordIsNone(t *testing.T) {
	_, err := decodeStrikes([]byte{1, 2, 3})
	assert.ErrorIs(t, err, errStrikesFormat)
	s := Strikes{Seq: 9, Count: 1}
	got, err := decodeStrikes(s.encode())
	require.NoError(t, err)
	assert.Equal(t, uint64(9), got.Seq)

	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Append(t.Context(), []byte("a"))
	require.NoError(t, err)
	require.NoError(t, w.SetValues(map[string][]byte{keyStrikes: {1, 2, 3}}))
	s, err = LoadStrikes(w)
	require.NoError(t, err)
	assert.Zero(t, s, "a lost strike count is a few more attempts")
}

// A witness kept with the acknowledgements, no suspect, reaches the next
// process through the next commit (here Close's), with no commit of its own.
func TestWitnessKeptWithoutStrikes(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(t.Context(), []byte("a"), []byte("b"))
	require.NoError(t, err)
	want := Strikes{WitnessSeq: 2, Witness: []byte("b")}
	require.NoError(t, KeepWitness(w, want))
	s, err := LoadStrikes(w)
	require.NoError(t, err)
	assert.Zero(t, s, "not stored until a commit")
	require.NoError(t, w.Ack(2))
	require.NoError(t, w.Close())

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	s, err = LoadStrikes(w)
	require.NoError(t, err)
	assert.Equal(t, want, s)
	require.Zero(t, w.Len())
}
