package ledger_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

func TestDeadLettersRoundTripBytesExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	none, err := ledger.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.Empty(t, none)
	now := time.Now()
	in := []ledger.DeadLetter{
		{Seq: 7, Appended: now.Add(-time.Minute), At: now, Attempts: 3, Data: []byte("CMD RESTART")},
		{Seq: 9, Appended: now, At: now, Attempts: 3, Data: []byte("\x00\r\xff #evspool-dead-letter len=99")},
		{Seq: 10, Appended: now, At: now, Attempts: 1, Data: []byte{}},
	}
	for _, dl := range in {
		require.NoError(t, ledger.AppendDeadLetter(dir, dl, 0))
	}
	out, err := ledger.ReadDeadLetters(dir)
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
		require.NoError(t, ledger.AppendDeadLetter(dir, ledger.DeadLetter{Seq: uint64(i + 1), Data: data}, 1000))
	}
	fi, err := os.Stat(filepath.Join(dir, ledger.DeadLetterFile))
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size(), int64(1000))
	out, err := ledger.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.NotEmpty(t, out)
	assert.Less(t, len(out), 10, "the oldest generation is gone")
	assert.Equal(t, uint64(10), out[len(out)-1].Seq, "the newest is kept, oldest first")
}

func TestDeadLettersTornTailSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, ledger.AppendDeadLetter(dir, ledger.DeadLetter{Seq: 1, Data: []byte("one")}, 0))
	require.NoError(t, ledger.AppendDeadLetter(dir, ledger.DeadLetter{Seq: 2, Data: []byte("two two two")}, 0))
	path := filepath.Join(dir, ledger.DeadLetterFile)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()-5))
	out, err := ledger.ReadDeadLetters(dir)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "one", string(out[0].Data))

	require.NoError(t, os.WriteFile(path, []byte("garbage\n"), 0o600))
	_, err = ledger.ReadDeadLetters(dir)
	require.ErrorContains(t, err, "does not start with")
}

// TestDeadLettersRefuseLinks: the dead-letter files are never read or
// written through a link; a link where the rotation renames to is
// replaced, its target left alone.
func TestDeadLettersRefuseLinks(t *testing.T) {
	t.Parallel()
	t.Run("current", func(t *testing.T) {
		dir, o := plant(t, ledger.DeadLetterFile)
		err := ledger.AppendDeadLetter(dir, ledger.DeadLetter{Seq: 1, Data: []byte("poison")}, 0)
		require.ErrorIs(t, err, wal.ErrUnsafeFile)
		_, err = ledger.ReadDeadLetters(dir)
		require.ErrorIs(t, err, wal.ErrUnsafeFile, "inspect does not read through it")
		o.untouched(t)
	})
	t.Run("rotated over a link", func(t *testing.T) {
		dir, o := plant(t, ledger.DeadLetterFile+".1")
		for i := range 3 {
			require.NoError(t, ledger.AppendDeadLetter(dir, ledger.DeadLetter{Seq: uint64(i + 1), Data: make([]byte, 400)}, 1000))
		}
		fi, err := os.Lstat(filepath.Join(dir, ledger.DeadLetterFile+".1"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "the rotation replaced the link")
		o.untouched(t)
	})
	t.Run("no directory", func(t *testing.T) {
		_, err := ledger.ReadDeadLetters(filepath.Join(t.TempDir(), "missing"))
		require.ErrorIs(t, err, os.ErrNotExist, "a missing file is none, a missing directory an error")
	})
}

// outside is a file outside the spool directory that a planted link
// points to.
type outside struct {
	path string
	data []byte
}

// plant makes a spool directory with name a link to a file outside it.
func plant(t *testing.T, name string) (string, outside) {
	t.Helper()
	o := outside{path: filepath.Join(t.TempDir(), "root-owned"), data: []byte("a file of root's, not evspool's\n")}
	require.NoError(t, os.WriteFile(o.path, o.data, 0o644))
	dir := t.TempDir()
	require.NoError(t, os.Symlink(o.path, filepath.Join(dir, name)))
	return dir, o
}

func (o outside) untouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(o.path)
	require.NoError(t, err)
	require.Equal(t, o.data, b, "written through a link")
}
