package wal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/internal/testkit/spooltest"
)

// fileValues lists the values the events bucket holds: each one's first
// and last sequence number, decoded and checked.
func fileValues(t *testing.T, w *WAL) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	require.NoError(t, w.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(eventsBucket).ForEach(func(k, v []byte) error {
			val, err := decodeValue(k, v)
			if err != nil {
				return err
			}
			if val.n > 1 {
				require.LessOrEqual(t, len(v), frameRoom, "a frame larger than frameRoom")
			}
			out = append(out, [2]uint64{val.first, val.last()})
			return nil
		})
	}))
	return out
}

func frameEvent(i int, size int) []byte {
	e := fmt.Appendf(nil, "frame event %d ", i)
	return append(e, bytes.Repeat([]byte{'f'}, max(size-len(e), 0))...)
}

func appendFrameEvents(t *testing.T, w *WAL, from, n, size int) {
	t.Helper()
	batch := make([][]byte, n)
	for i := range batch {
		batch[i] = frameEvent(from+i, size)
	}
	_, err := w.Append(context.Background(), batch...)
	require.NoError(t, err)
}

func requireEvents(t *testing.T, w *WAL, from, to, size int) {
	t.Helper()
	es, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, to-from+1)
	for i, e := range es {
		require.EqualValues(t, from+i, e.Seq)
		require.Equal(t, frameEvent(from+i, size), e.Data)
	}
	require.EqualValues(t, to-from+1, w.Len())
	require.EqualValues(t, to-from+1, w.Stats().PendingEvents)
	require.EqualValues(t, (to-from+1)*size, w.Stats().PendingBytes)
	require.EqualValues(t, from, w.FirstSeq())
}

// TestFramesPackACommit: a commit's events share values, each at most
// frameRoom bytes, in order and consecutive; a lone event is a record of
// its own; what is read back is what was appended.
func TestFramesPackACommit(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	appendFrameEvents(t, w, 1, 64, 100) // 64 events of a PTP line's size
	appendFrameEvents(t, w, 65, 1, 100)
	appendFrameEvents(t, w, 66, 3, 5000) // each too large to share a frame
	vals := fileValues(t, w)
	perFrame := (frameRoom - frameHead(64)) / (100 + 1)
	require.Len(t, vals, (64+perFrame-1)/perFrame+1+3, "values: %v", vals)
	next := uint64(1)
	for _, v := range vals {
		require.Equal(t, next, v[0], "values are consecutive")
		next = v[1] + 1
	}
	require.Equal(t, [2]uint64{65, 65}, vals[len(vals)-4], "a lone event is a value of its own")
	for _, v := range vals[len(vals)-3:] {
		require.Equal(t, v[0], v[1], "an event too large for a frame is stored alone")
	}
	es, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 68)
	for i, e := range es {
		size := 100
		if i >= 65 {
			size = 5000
		}
		require.Equal(t, frameEvent(i+1, size), e.Data)
	}
	// A read from inside a frame starts there.
	es, err = w.Read(10, 3, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{10, 11, 12}, seqOf3(es))
}

func seqOf3(es []Entry) []uint64 {
	var s []uint64
	for _, e := range es {
		s = append(s, e.Seq)
	}
	return s
}

// TestFramePartlyAcknowledged: acknowledging part of a frame hides those
// events at once and across a restart; the frame leaves the file only with
// its last event; a compaction stores what is left of it anew.
func TestFramePartlyAcknowledged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	appendFrameEvents(t, w, 1, 10, 100)
	require.Len(t, fileValues(t, w), 1, "ten events of 100 bytes make one frame")
	require.NoError(t, w.Ack(4))
	requireEvents(t, w, 5, 10, 100)
	require.NoError(t, w.FlushAcks(0))
	requireEvents(t, w, 5, 10, 100)
	require.Equal(t, [][2]uint64{{1, 10}}, fileValues(t, w), "the frame stays while it holds pending events")
	require.NoError(t, w.Close())

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	require.Nil(t, w.Salvaged())
	requireEvents(t, w, 5, 10, 100)
	costBefore := w.cost.Load()
	require.NoError(t, w.Compact())
	requireEvents(t, w, 5, 10, 100)
	require.Equal(t, [][2]uint64{{5, 10}}, fileValues(t, w), "a compaction stores what is left of the frame")
	require.Less(t, w.cost.Load(), costBefore+1)
	require.NoError(t, w.Ack(10))
	require.NoError(t, w.FlushAcks(0))
	require.Empty(t, fileValues(t, w))
	require.Zero(t, w.Len())
	require.Zero(t, w.cost.Load())
	require.NoError(t, w.Close())

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.Zero(t, w.Len())
	last, err := w.Append(context.Background(), []byte("next"))
	require.NoError(t, err)
	require.EqualValues(t, 11, last)
}

// TestFrameDroppedWhole: making room by dropping the oldest drops whole
// frames, every event of them counted; nothing else goes.
func TestFrameDroppedWhole(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true, MaxBytes: MinMaxBytes})
	require.NoError(t, err)
	defer w.Close()
	n := 0
	for w.Stats().DroppedOldest.Events == 0 {
		appendFrameEvents(t, w, n+1, 50, 100)
		n += 50
	}
	st := w.Stats()
	vals := fileValues(t, w)
	first := vals[0][0]
	require.EqualValues(t, first-1, st.DroppedOldest.Events, "the dropped events are those before the oldest value left")
	require.EqualValues(t, (first-1)*100, st.DroppedOldest.Bytes)
	require.EqualValues(t, first, st.FirstSeq)
	requireEvents(t, w, int(first), n, 100)
}

// TestFrameDamaged: a flipped bit in a frame makes Open salvage the spool;
// the frame's events are lost, counted exactly, and no other.
func TestFrameDamaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	appendFrameEvents(t, w, 1, 100, 100)
	first, last := w.ValueSpan(50)
	require.Less(t, first, last, "event 50 is in a frame")
	require.NoError(t, w.Close())

	path := filepath.Join(dir, fileName)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	at := bytes.Index(raw, frameEvent(50, 100))
	require.Positive(t, at)
	raw[at+50] ^= 0x04
	require.NoError(t, os.WriteFile(path, raw, 0o600))

	w, err = Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	r := w.Salvaged()
	require.NotNil(t, r)
	require.Equal(t, last-first+1, r.Missing)
	require.EqualValues(t, 100-(last-first+1), r.Recovered)
	es, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	var want []uint64
	for s := uint64(1); s <= 100; s++ {
		if s < first || s > last {
			want = append(want, s)
		}
	}
	require.Equal(t, want, seqOf3(es))
	for _, e := range es {
		require.Equal(t, frameEvent(int(e.Seq), 100), e.Data)
	}
}

// TestOpenMarksFormat2: a spool written before frames (format 2,
// testdata/spool-format2.tar.gz: 300 events of 200 bytes in one commit,
// an event a value, 1..100 acknowledged, 101..120 expired) is read as it
// is and marked format 3 before anything is stored, so that an evspool of
// format 2 refuses it rather than take its frames for damage; a format it
// does not know is refused by name.
func TestOpenMarksFormat2(t *testing.T) {
	dir := t.TempDir()
	spooltest.Untar(t, "testdata/spool-format2.tar.gz", dir)
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	require.Nil(t, w.Salvaged())
	st := w.Stats()
	require.EqualValues(t, 180, st.PendingEvents)
	require.EqualValues(t, 121, st.FirstSeq)
	require.Equal(t, Counter{Events: 20, Bytes: 20 * 199}, st.Expired)
	es, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 180)
	require.Equal(t, fmt.Sprintf("format 2 event %d %0180d", 121, 121), string(es[0].Data))
	_, err = w.Append(context.Background(), []byte("a"), []byte("frame"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	path := filepath.Join(dir, fileName)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		v, ok, err := getMetaUint(tx.Bucket(metaBucket), keyFormat)
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, formatVersion, v, "marked format 3")
		return putMetaUint(tx.Bucket(metaBucket), keyFormat, formatVersion+1)
	}))
	require.NoError(t, db.Close())
	var m meta
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		_, err := m.load(tx.Bucket(metaBucket))
		require.ErrorContains(t, err, "format_version 4: this evspool reads versions 1 to 3")
		return nil
	}))
	require.NoError(t, db.Close())
}
