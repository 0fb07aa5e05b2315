package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

func TestPeerMark(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadPeerMark(dir)
	require.Error(t, err, "none yet")
	p, err := OpenPeerNotes(dir)
	require.NoError(t, err)
	want := PeerMark{Pid: 42, Start: 7, Stack: 0x7ffd0000, Ino: 99, Through: 1234}
	require.NoError(t, p.Write(PeerMark{Pid: 1, Through: 1}))
	require.NoError(t, p.Write(want))
	got, err := ReadPeerMark(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	b, err := os.ReadFile(filepath.Join(dir, PeerFile))
	require.NoError(t, err)
	b[10] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, PeerFile), b, 0o600))
	_, err = ReadPeerMark(dir)
	assert.ErrorIs(t, err, errPeerMark, "damaged")

	require.NoError(t, p.Clear())
	_, err = ReadPeerMark(dir)
	assert.ErrorIs(t, err, errPeerMark, "cleared")

	// A receiver known before anything was written to it, on a spool
	// that never acknowledged anything: a note all the same.
	known := PeerMark{Pid: 42, Start: 7, Stack: 0x7ffd0000, Ino: 99}
	require.NoError(t, p.Write(known))
	got, err = ReadPeerMark(dir)
	require.NoError(t, err)
	assert.Equal(t, known, got)

	// The receiver's end known, not its reader: a note (the next start
	// waits for that end's close), naming no process.
	unknown := PeerMark{Ino: 99, Through: 5}
	require.NoError(t, p.Write(unknown))
	got, err = ReadPeerMark(dir)
	require.NoError(t, err)
	assert.Equal(t, unknown, got)
	require.NoError(t, p.Close())

	// A note of the first format named the listener, not the reader: not
	// used.
	old := make([]byte, 0, 44)
	old = append(old, 0, 0, 0, 42)
	for range 4 {
		old = append(old, 0, 0, 0, 0, 0, 0, 0, 9)
	}
	old = binary.BigEndian.AppendUint32(old, crc32.Checksum(old, castagnoli))
	require.NoError(t, os.WriteFile(filepath.Join(dir, PeerFile), old, 0o600))
	_, err = ReadPeerMark(dir)
	assert.ErrorIs(t, err, errPeerMark, "first format")
}

// TestPeerNotesRefuseLinks: the receiver note is never read or written
// through a link.
func TestPeerNotesRefuseLinks(t *testing.T) {
	o := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(o, []byte("not evspool's"), 0o644))
	dir := t.TempDir()
	require.NoError(t, os.Symlink(o, filepath.Join(dir, PeerFile)))
	_, err := OpenPeerNotes(dir)
	require.ErrorIs(t, err, wal.ErrUnsafeFile)
	_, err = ReadPeerMark(dir)
	require.ErrorIs(t, err, wal.ErrUnsafeFile)
	b, err := os.ReadFile(o)
	require.NoError(t, err)
	require.Equal(t, "not evspool's", string(b))
}
