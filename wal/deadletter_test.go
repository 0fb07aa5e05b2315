package wal_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestDeadLettersRoundTripBytesExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	none, err := wal.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.Empty(t, none)
	now := time.Now()
	in := []wal.DeadLetter{
		{Seq: 7, Appended: now.Add(-time.Minute), At: now, Attempts: 3, Data: []byte("CMD RESTART")},
		{Seq: 9, Appended: now, At: now, Attempts: 3, Data: []byte("\x00\r\xff #evspool-dead-letter len=99")},
		{Seq: 10, Appended: now, At: now, Attempts: 1, Data: []byte{}},
	}
	for _, dl := range in {
		require.NoError(t, wal.AppendDeadLetter(dir, dl, 0))
	}
	out, err := wal.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.Len(t, out, len(in))
	for i := range in {
		assert.Equal(t, in[i].Seq, out[i].Seq)
		assert.Equal(t, in[i].Data, out[i].Data)
		assert.Equal(t, in[i].Attempts, out[i].Attempts)
		assert.True(t, in[i].At.Equal(out[i].At))
	}
}

func TestDeadLettersRotateAtCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := make([]byte, 300)
	for i := range 10 {
		require.NoError(t, wal.AppendDeadLetter(dir, wal.DeadLetter{Seq: uint64(i + 1), Data: data}, 1000))
	}
	fi, err := os.Stat(filepath.Join(dir, wal.DeadLetterFile))
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size(), int64(1000))
	out, err := wal.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.NotEmpty(t, out)
	assert.Less(t, len(out), 10, "the oldest generation is gone")
	assert.Equal(t, uint64(10), out[len(out)-1].Seq, "the newest is kept, oldest first")
}

func TestDeadLettersTornTailSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, wal.AppendDeadLetter(dir, wal.DeadLetter{Seq: 1, Data: []byte("one")}, 0))
	require.NoError(t, wal.AppendDeadLetter(dir, wal.DeadLetter{Seq: 2, Data: []byte("two two two")}, 0))
	path := filepath.Join(dir, wal.DeadLetterFile)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()-5))
	out, err := wal.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "one", string(out[0].Data))

	require.NoError(t, os.WriteFile(path, []byte("garbage\n"), 0o600))
	_, err = wal.ReadDeadLetters(dir)
	require.ErrorContains(t, err, "does not start with")
}
