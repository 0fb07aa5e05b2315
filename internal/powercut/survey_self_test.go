package powercut

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestSurveySeesRecords checks the survey's two readings on a spool written
// by wal (no FUSE needed): every record is found committed and intact; with
// both meta pages destroyed bbolt cannot read the file, yet every record is
// still found intact; a record with one byte changed is not.
func TestSurveySeesRecords(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for id := range 300 {
		_, err := w.Append(context.Background(), []byte(eventLine(id)))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	img, err := os.ReadFile(filepath.Join(dir, "spool.db"))
	require.NoError(t, err)

	p := &powercut{t: t, tmp: t.TempDir()}
	committed, readable := p.committedEvents(img)
	require.True(t, readable)
	require.Len(t, committed, 300)
	require.Len(t, intactRecords(img), 300)

	torn := bytes.Clone(img)
	ps := os.Getpagesize()
	clear(torn[:2*ps]) // both meta pages
	_, readable = p.committedEvents(torn)
	require.False(t, readable, "bbolt read a file without meta pages")
	require.Len(t, intactRecords(torn), 300, "records are found without bbolt")

	line := []byte(eventLine(123))
	i := bytes.Index(torn, line)
	require.Positive(t, i)
	torn[i+len(line)-1] ^= 1
	require.Len(t, intactRecords(torn), 299)
	require.NotContains(t, intactRecords(torn), 123, "a record that fails its checksum")
}
