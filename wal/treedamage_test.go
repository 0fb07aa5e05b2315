package wal_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

const (
	stEvents    = 3000 // enough 500-byte events for a 3-level events tree
	stEventSize = 500
)

// stTree is the shape of the events bucket's tree in a closed spool file,
// read by hand (page size 4096).
type stTree struct {
	pgid   uint64 // the meta page's high-water mark
	free   uint64 // the freelist page
	root   uint64 // the events tree's root, a branch
	mid    uint64 // the root's first child, a branch
	second uint64 // the root's second child, a branch
	leaf   uint64 // mid's first child, a leaf
}

// stSetup writes a spool whose events tree has three levels, closes it and
// returns its directory, file path and tree.
func stSetup(t *testing.T) (dir, path string, tr stTree) {
	dir = t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for i := uint64(1); i <= stEvents; i += 100 {
		batch := make([][]byte, 100)
		for j := range batch {
			batch[j] = spEvent(i+uint64(j), stEventSize)
		}
		_, err := w.Append(context.Background(), batch...)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	path = filepath.Join(dir, "spool.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return dir, path, stReadTree(t, b)
}

func stReadTree(t *testing.T, b []byte) stTree {
	t.Helper()
	le := binary.LittleEndian
	page := func(id uint64) []byte { return b[id*4096 : (id+1)*4096] }
	// The meta page with the higher txid is the one in force.
	m := page(0)[16:]
	if m1 := page(1)[16:]; le.Uint64(m1[48:]) > le.Uint64(m[48:]) {
		m = m1
	}
	tr := stTree{free: le.Uint64(m[32:]), pgid: le.Uint64(m[40:])}
	// The root bucket's page is a leaf holding the buckets "events" and "meta".
	rootLeaf := page(le.Uint64(m[16:]))
	require.Equal(t, uint16(0x02), le.Uint16(rootLeaf[8:]), "root bucket page is a leaf")
	for i := 0; i < int(le.Uint16(rootLeaf[10:])); i++ {
		at := 16 + i*16
		pos, ks := int(le.Uint32(rootLeaf[at+4:])), int(le.Uint32(rootLeaf[at+8:]))
		if string(rootLeaf[at+pos:at+pos+ks]) == "events" {
			tr.root = le.Uint64(rootLeaf[at+pos+ks:])
		}
	}
	require.NotZero(t, tr.root, "events bucket not inline")
	child := func(id uint64, i int) uint64 {
		p := page(id)
		require.Equal(t, uint16(0x01), le.Uint16(p[8:]), "page %d is a branch", id)
		require.Greater(t, int(le.Uint16(p[10:])), i)
		return le.Uint64(p[16+i*16+8:])
	}
	tr.mid, tr.second = child(tr.root, 0), child(tr.root, 1)
	tr.leaf = child(tr.mid, 0)
	require.Equal(t, uint16(0x02), le.Uint16(page(tr.leaf)[8:]), "three levels")
	return tr
}

// stSetChild makes the ith child pointer of branch page id point at to.
func stSetChild(b []byte, id uint64, i int, to uint64) {
	binary.LittleEndian.PutUint64(b[id*4096+16+uint64(i)*16+8:], to)
}

// TestTreeDamage points a branch page's children where a torn write could:
// back at itself or an ancestor (bbolt's cursor then descends forever: the
// hang seen after a power cut), past the file's pages, at a meta or
// freelist page, at a leaf one level too high. Open must come back, keep the
// damaged file aside and salvage every event: the leaves are intact.
func TestTreeDamage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(b []byte, tr stTree)
	}{
		{"root's first child is the root", func(b []byte, tr stTree) { stSetChild(b, tr.root, 0, tr.root) }},
		{"first child points at its parent", func(b []byte, tr stTree) { stSetChild(b, tr.mid, 0, tr.mid) }},
		{"first child points at the root", func(b []byte, tr stTree) { stSetChild(b, tr.mid, 0, tr.root) }},
		{"second child points at the root", func(b []byte, tr stTree) { stSetChild(b, tr.second, 1, tr.root) }},
		{"root's second child is the root", func(b []byte, tr stTree) { stSetChild(b, tr.root, 1, tr.root) }},
		{"child past the high-water mark", func(b []byte, tr stTree) { stSetChild(b, tr.mid, 0, tr.pgid) }},
		{"child far past the file", func(b []byte, tr stTree) { stSetChild(b, tr.root, 0, 1<<40) }},
		{"child is meta page 0", func(b []byte, tr stTree) { stSetChild(b, tr.root, 0, 0) }},
		{"child is meta page 1", func(b []byte, tr stTree) { stSetChild(b, tr.mid, 0, 1) }},
		{"child is the freelist", func(b []byte, tr stTree) { stSetChild(b, tr.mid, 0, tr.free) }},
		{"leaf one level too high", func(b []byte, tr stTree) { stSetChild(b, tr.root, 0, tr.leaf) }},
		{"one leaf under two parents", func(b []byte, tr stTree) { stSetChild(b, tr.second, 0, tr.leaf) }},
	}
	// One spool written for every case, each damaging a copy of it.
	src, _, tr := stSetup(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := stCopy(t, src)
			path := filepath.Join(dir, "spool.db")
			spCorrupt(t, path, func(b []byte) []byte { tc.damage(b, tr); return b })

			w := stOpenWithin(t, dir, 10*time.Second)
			defer w.Close()
			r := w.Salvaged()
			require.NotNil(t, r, "damage not detected")
			t.Logf("cause: %v", r.Cause)
			require.ErrorIs(t, r.Cause, wal.ErrCorrupt)
			require.FileExists(t, r.CorruptPath)
			require.Contains(t, filepath.Base(r.CorruptPath), "spool.db.corrupt-")
			es := spReadAll(t, w)
			require.Equal(t, spRange(1, stEvents), spSeqs(es), "every event on an intact leaf")
			for _, e := range es {
				require.Equal(t, spEvent(e.Seq, stEventSize), e.Data)
			}
			require.Equal(t, uint64(stEvents), r.Recovered)
			require.Zero(t, r.Missing)
		})
	}
}

// stCopy copies the closed spool in src (its regular files) to a fresh
// directory and returns it.
func stCopy(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600))
	}
	return dst
}

// TestTreeCheckSound: the walk takes a sound multi-level tree for sound.
func TestTreeCheckSound(t *testing.T) {
	t.Parallel()
	dir, _, _ := stSetup(t)
	w := stOpenWithin(t, dir, 10*time.Second)
	defer w.Close()
	require.Nil(t, w.Salvaged())
	require.Equal(t, uint64(stEvents), w.Len())
}

// stOpenWithin opens the spool in dir, failing the test if Open has not
// returned within limit: a hang detector, not a speed assertion. A hung
// Open's goroutine is left behind (nothing can stop it).
func stOpenWithin(t *testing.T, dir string, limit time.Duration) *wal.WAL {
	t.Helper()
	type result struct {
		w   *wal.WAL
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := wal.Open(dir, &wal.Options{NoSync: true})
		done <- result{w, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		return r.w
	case <-time.After(limit):
		t.Fatalf("Open has not returned after %v: hung on the damaged tree", limit)
		return nil
	}
}
