package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Notes go through the shared mapping, and ReadPeerMark, which reads the
// file, sees them; when the file is cut short under the mapping, the store
// faults, and the note is written with pwrite instead, without a crash.
func TestPeerNotesSurviveAFileCutShort(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenPeerNotes(dir)
	require.NoError(t, err)
	defer p.Close()
	require.NotNil(t, p.m, "mapped")

	first := PeerMark{Pid: 42, Start: 7, Stack: 0x7ffd0000, Ino: 99, Through: 10}
	require.NoError(t, p.Write(first))
	got, err := ReadPeerMark(dir)
	require.NoError(t, err)
	require.Equal(t, first, got)
	require.NotNil(t, p.m, "still mapped")

	require.NoError(t, os.Truncate(filepath.Join(dir, PeerFile), 0))
	second := first
	second.Through = 11
	require.NoError(t, p.Write(second))
	require.Nil(t, p.m, "the fault ends the mapping")
	got, err = ReadPeerMark(dir)
	require.NoError(t, err)
	require.Equal(t, second, got, "written with pwrite")
}
