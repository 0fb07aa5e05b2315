package powercut

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

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

// TestSurveySeesFrames is TestSurveySeesRecords on a spool written by
// multi-event Appends, whose commits wal stores as frames (a lone event
// still as a record): every event is found committed and intact, and intact
// with both meta pages destroyed and then every leaf page's header too (the
// frames are found without page structure); a byte changed in one frame
// makes exactly that frame's events not intact, those before the changed
// one and after it, and a byte changed in a lone record exactly that event.
func TestSurveySeesFrames(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	const n = 2000
	batches := []int{1, 2, 5, 17, 40, 64, 1, 3, 30, 9}
	for id, b := 0, 0; id < n; b++ {
		var events [][]byte
		for range min(batches[b%len(batches)], n-id) {
			events = append(events, []byte(eventLine(id)))
			id++
		}
		last, err := w.Append(context.Background(), events...)
		require.NoError(t, err)
		require.EqualValues(t, id, last, "sequence numbers from 1, ids from 0")
	}
	require.NoError(t, w.Close())
	path := filepath.Join(dir, "spool.db")
	img, err := os.ReadFile(path)
	require.NoError(t, err)

	// The values as bbolt reads them, each event with the ids of its
	// value's events (this process may map the file: not on the FUSE mount).
	value := map[int][2]int{} // id -> first and last id of its value
	frames, records := 0, 0
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("events")).ForEach(func(k, v []byte) error {
			events, ok := soundValue(k, v)
			require.True(t, ok, "value %x", k)
			if len(events) > 1 {
				frames++
			} else {
				records++
			}
			first := int(binary.BigEndian.Uint64(k)) - 1
			for i, e := range events {
				require.Equal(t, eventLine(first+i), string(e), "a frame's events are numbered from its key")
				value[first+i] = [2]int{first, first + len(events) - 1}
			}
			return nil
		})
	}))
	require.NoError(t, db.Close())
	require.Len(t, value, n)
	require.Greater(t, frames, 100, "frames")
	require.Greater(t, records, 20, "lone events, stored as records")

	p := &powercut{t: t, tmp: t.TempDir()}
	committed, readable := p.committedEvents(img)
	require.True(t, readable)
	require.Len(t, committed, n)
	require.Equal(t, committed, intactRecords(img))

	torn := bytes.Clone(img)
	ps := os.Getpagesize()
	clear(torn[:2*ps]) // both meta pages
	_, readable = p.committedEvents(torn)
	require.False(t, readable, "bbolt read a file without meta pages")
	require.Len(t, intactRecords(torn), n, "events are found without bbolt")
	// The header of each leaf page (flags 0x02, and its own id, which the
	// second page of a two-page node does not hold).
	leaves := 0
	for o := 2 * ps; o+16 <= len(torn); o += ps {
		if binary.LittleEndian.Uint64(torn[o:o+8]) == uint64(o/ps) && binary.LittleEndian.Uint16(torn[o+8:o+10])&0x02 != 0 {
			clear(torn[o : o+16]) // id, flags, count, overflow
			leaves++
		}
	}
	require.Positive(t, leaves)
	require.Len(t, intactRecords(torn), n, "events are found without page headers")

	// spoil changes a byte of id's line in every copy of it in torn (old
	// copies of a leaf stay in freed pages) and returns the ids no longer
	// intact.
	spoil := func(id int) []int {
		line := []byte(eventLine(id))
		copies := 0
		for o := 0; ; copies++ {
			i := bytes.Index(torn[o:], line)
			if i < 0 {
				break
			}
			o += i + len(line)
			torn[o-1] ^= 1
		}
		require.Positive(t, copies)
		intact := intactRecords(torn)
		var missing []int
		for id := range n {
			if !intact[id] {
				missing = append(missing, id)
			}
		}
		return missing
	}
	// A frame of the middle of the spool, changed in an event of its
	// middle: its events, before and after, go with it.
	id := n / 2
	for value[id][1]-value[id][0] < 4 {
		id++
	}
	span := value[id]
	id = (span[0] + span[1]) / 2
	want := []int{}
	for i := span[0]; i <= span[1]; i++ {
		want = append(want, i)
	}
	require.Equal(t, want, spoil(id), "the events of a frame that fails its checksum")
	// A lone event after it: that event alone.
	for id = span[1] + 1; value[id][0] != value[id][1]; id++ {
	}
	require.Equal(t, append(want, id), spoil(id), "and of a record that fails its checksum")
}
