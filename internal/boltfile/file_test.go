package boltfile

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

const (
	realEvents = 3000 // enough 500-byte values for a 3-level events tree
	realPage   = 4096
)

// realFile returns a file written by bbolt itself: a bucket "events" of
// realEvents values under 8-byte keys and an inline bucket "meta" of one.
func realFile(t testing.TB, events int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "real.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: realPage, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		ev, err := tx.CreateBucket([]byte("events"))
		if err != nil {
			return err
		}
		for i := range events {
			if err := ev.Put(binary.BigEndian.AppendUint64(nil, uint64(i+1)), bytes.Repeat([]byte{byte(i)}, 500)); err != nil {
				return err
			}
		}
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return meta.Put([]byte("next_sequence"), []byte("12345678"))
	}))
	require.NoError(t, db.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// check runs what wal runs before bbolt maps a file.
func check(b []byte) error {
	r := bytes.NewReader(b)
	m, free, err := Layout(r, int64(len(b)))
	if err != nil {
		return err
	}
	if err := CheckMetaPair(r); err != nil {
		return err
	}
	return CheckTrees(r, m, free, required...)
}

// TestRealFile: a file bbolt wrote passes every check, Scan finds every
// pair in it and InForceRoot the inline bucket's.
func TestRealFile(t *testing.T) {
	t.Parallel()
	b := realFile(t, realEvents)
	require.NoError(t, check(b))

	keys := map[uint64]bool{}
	require.NoError(t, Scan(bytes.NewReader(b), int64(len(b)), 512, func(k, v []byte) {
		if len(k) == 8 {
			require.Len(t, v, 500)
			keys[binary.BigEndian.Uint64(k)] = true
		}
	}))
	require.Len(t, keys, realEvents)

	var inline []string
	require.True(t, InForceRoot(bytes.NewReader(b), int64(len(b)), func(k, v []byte) { inline = append(inline, string(k)+"="+string(v)) }))
	require.Equal(t, []string{"next_sequence=12345678"}, inline)
}

// TestRealFileDamage damages a file bbolt wrote where a torn write could,
// and finds each before bbolt would read it.
func TestRealFileDamage(t *testing.T) {
	t.Parallel()
	sound := realFile(t, realEvents)
	m, _ := BestMeta(bytes.NewReader(sound))
	le := binary.LittleEndian
	page := func(b []byte, id uint64) []byte { return b[id*realPage : (id+1)*realPage] }
	var events uint64 // the events tree's root, a branch
	require.NoError(t, LeafElems(page(sound, m.Root), func(_ int, _ uint32, k, v []byte) error {
		if string(k) == "events" {
			events = le.Uint64(v)
		}
		return nil
	}))
	require.Equal(t, uint16(branchPageFlag), decodeHeader(page(sound, events)).flags)
	child := func(b []byte, id uint64, i int) []byte { return page(b, id)[elemAt(i)+8:] }
	cases := []struct {
		name    string
		damage  func(b []byte)
		wantErr string
	}{
		{"truncated", func(b []byte) {}, "truncated"},
		{"meta page 0 torn", func(b []byte) { b[20] ^= 1 }, "meta page 0 fails its checksum"},
		{"child is its parent", func(b []byte) { le.PutUint64(child(b, events, 0), events) }, "reached twice"},
		{"child past the file", func(b []byte) { le.PutUint64(child(b, events, 0), 1<<40) }, "not a data page"},
		{"child is meta page 1", func(b []byte) { le.PutUint64(child(b, events, 1), 1) }, "page 1 is not a data page"},
		{"freelist page not one", func(b []byte) { le.PutUint16(page(b, m.Freelist)[8:], leafPageFlag) }, "not a freelist"},
		{"root bucket lost a flag", func(b []byte) { le.PutUint32(page(b, m.Root)[PageHeaderSize:], 0) }, "not a bucket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(sound)
			tc.damage(b)
			if tc.name == "truncated" {
				b = b[:(m.PageCount-1)*realPage] // the last page in use cut off
			}
			require.ErrorContains(t, check(b), tc.wantErr)
		})
	}
}

// FuzzDecodePage: the decoders end without panicking on any file (every
// element LeafElems hands out lies in its page), and what Layout accepts
// the tree check walks to an end.
func FuzzDecodePage(f *testing.F) {
	f.Add(realFile(f, 40))
	f.Add(make([]byte, 3*realPage))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64*realPage {
			return
		}
		_ = check(b)
		_ = Scan(bytes.NewReader(b), int64(len(b)), realPage, func(k, v []byte) {})
		for off := 0; off < len(b); off += 512 {
			// Capped at its length: an element sliced past it panics.
			end := min(len(b), off+realPage)
			_ = LeafElems(b[off:end:end], func(_ int, _ uint32, k, v []byte) error { return nil })
		}
	})
}
