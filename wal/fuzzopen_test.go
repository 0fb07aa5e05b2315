package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/evspool/evspool/internal/boltfile"
	bolt "go.etcd.io/bbolt"
)

// FuzzOpen flips bits in a spool's files (every page kind of spool.db:
// meta, freelist, root, branch, leaf, the inline meta bucket, overflow,
// free; and the marks file), then opens the spool, appends, closes and
// reopens it. Nothing may panic or hang, Open and the first commit may not
// allocate more than a bound, the pending events must be the undamaged ones
// (every event on a page no flip touched, in order, with its bytes; none
// acknowledged or never written), and the new events must survive the
// reopen. The input is a list of flips of 6 bytes each: what to flip (a
// page, an inline meta element's value, key size or flags, a root element's
// flags, the marks file), which page kind or element, which page of that
// kind, offset (2 bytes), bit mask. Whatever it hits, the events on the page
// of the flipped byte count as damaged.
func FuzzOpen(f *testing.F) {
	for _, seed := range fuzzOpenSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, flips []byte) {
		base := fuzzBase(t)
		if len(flips) > 6*4 {
			return
		}
		dir := t.TempDir()
		db, marks := bytes.Clone(base.db), bytes.Clone(base.marks)
		damaged := map[uint64]bool{} // events on a touched page
		for i := 0; i+6 <= len(flips); i += 6 {
			base.flip(db, marks, flips[i:i+6], damaged)
		}
		if !bytes.Equal(marks, base.marks) && !bytes.Equal(db[:2*4096], base.db[:2*4096]) {
			// Without the marks file's word that the spool was closed, a
			// bad meta page may be one torn by a cut: bbolt falls back on
			// the other, one commit older (see the package's Caveats).
			for seq := uint64(411); seq <= 420; seq++ {
				damaged[seq] = true
			}
		}
		writeFile(t, filepath.Join(dir, fileName), db)
		writeFile(t, filepath.Join(dir, marksFileName), marks)
		fuzzOpenCheck(t, dir, base, damaged)
	})
}

// fuzzOpenSeeds are the cases and one flip of each kind.
var fuzzOpenSeeds = [][]byte{
	{},
	{kindMetaKey, 6, 0, 0, 0, 0x01},    // removed_through's value, +2^56 (keys sorted: its index)
	{kindMetaKey, 6, 0, 0, 5, 0x40},    // removed_through's value, +2^22
	{kindRootFlag, 0, 0, 0, 0, 0x01},   // events bucket's flag cleared
	{kindRootFlag, 1, 0, 0, 0, 0x01},   // meta bucket's flag cleared
	{kindMetaKSize, 0, 0, 0, 3, 0x08},  // a meta key's size +2^27
	{kindMetaFlag, 3, 0, 0, 0, 0x01},   // a meta value flagged a bucket
	{kindPage, pgMeta, 0, 0, 40, 0x04}, // meta page 0
	{kindPage, pgMeta, 1, 0, 60, 0x10}, // meta page 1
	{kindPage, pgMeta, 0, 0, 25, 0x30}, // meta page 0's page size: 4096 read as 8192 by salvage's scan
	{kindPage, pgFreelist, 0, 0, 10, 0x01},
	{kindPage, pgBranch, 0, 0, 24, 0x01}, // a child pointer
	{kindPage, pgBranch, 0, 0, 36, 0x01}, // a key
	{kindPage, pgLeaf, 3, 0, 10, 0x40},   // a leaf's count
	{kindPage, pgLeaf, 5, 2, 0, 0x08},    // a record
	{kindPage, pgOverflow, 0, 0, 100, 0x80},
	{kindPage, pgFree, 0, 0, 200, 0x01},
	{kindPage, pgRoot, 0, 0, 10, 0x01},
	{kindMarks, 0, 0, 0, 9, 0x20}, // the removal mark
	{kindMarks, 0, 0, 0, 9, 0x20, kindPage, pgMeta, 1, 0, 40, 0x04},
}

// fuzzOpenCheck is FuzzOpen's property on the damaged spool in dir.
func fuzzOpenCheck(t *testing.T, dir string, base *fuzzSpool, damaged map[uint64]bool) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	w, err := Open(dir, &Options{NoSync: true, MaxBytes: MinMaxBytes * 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer w.Close()
	got := fuzzPending(t, w)
	last, err := w.Append(context.Background(), []byte("new 1"), []byte("new 2"))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("append after Open: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("Open and a commit allocated %d MiB", alloc>>20)
	}
	if took > 5*time.Second {
		t.Fatalf("Open and a commit took %v", took)
	}
	base.checkPending(t, got, damaged, "after Open")
	if len(got) > 0 && last-1 <= got[len(got)-1].Seq {
		t.Fatalf("new events numbered up to %d, at or below pending %d", last, got[len(got)-1].Seq)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	w2, err := Open(dir, &Options{NoSync: true, MaxBytes: MinMaxBytes * 4})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer w2.Close()
	again := fuzzPending(t, w2)
	if len(again) != len(got)+2 || again[len(again)-1].Seq != last {
		t.Fatalf("reopen: %d pending, last %d; before it %d (the new ones up to %d); first Open's salvage: %v; reopen's: %v",
			len(again), seqOf(again), len(got), last, w.Salvaged(), w2.Salvaged())
	}
}

func seqOf(es []Entry) uint64 {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

func fuzzPending(t *testing.T, w *WAL) []Entry {
	es, err := w.Read(0, 0, 0)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if uint64(len(es)) != w.Len() {
		t.Fatalf("Read returns %d, Len says %d", len(es), w.Len())
	}
	return es
}

func writeFile(t *testing.T, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzOpen's page kinds.
const (
	kindPage      = iota // a page of one of the kinds below
	kindMetaKey          // a byte of an inline meta value
	kindRootFlag         // a root bucket element's flags
	kindMetaKSize        // an inline meta element's key size
	kindMetaFlag         // an inline meta element's flags
	kindMarks            // the marks file
	kinds
)

const (
	pgMeta = iota
	pgFreelist
	pgRoot
	pgBranch
	pgLeaf
	pgOverflow
	pgFree
	pgKinds
)

// fuzzSpool is the spool FuzzOpen damages, with where its pages are.
type fuzzSpool struct {
	db, marks []byte
	pending   map[uint64][]byte
	pages     [pgKinds][]uint64
	leafSeqs  map[uint64][]uint64 // page (and its overflow pages) -> events on it
	metaElems []int               // element header offsets of the inline meta bucket
	rootElems []int
}

var (
	fuzzBaseOnce  sync.Once
	fuzzBaseSpool *fuzzSpool
	fuzzBaseErr   error
)

func fuzzBase(t *testing.T) *fuzzSpool {
	fuzzBaseOnce.Do(func() { fuzzBaseSpool, fuzzBaseErr = buildFuzzSpool() })
	if fuzzBaseErr != nil {
		t.Fatal(fuzzBaseErr)
	}
	return fuzzBaseSpool
}

// buildFuzzSpool writes the spool FuzzOpen damages: events 1..420 of 200
// bytes in batches (so the file holds free pages with stale copies), one of
// 9000 bytes (overflow pages), 1..100 acknowledged and deleted, two more
// commits after that; closed cleanly.
func buildFuzzSpool() (*fuzzSpool, error) {
	dir, err := os.MkdirTemp("", "fuzzopen")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w, err := Open(dir, &Options{NoSync: true, MaxBytes: MinMaxBytes * 4})
	if err != nil {
		return nil, err
	}
	s := &fuzzSpool{pending: map[uint64][]byte{}, leafSeqs: map[uint64][]uint64{}}
	appendRange := func(from, to uint64) error {
		var batch [][]byte
		for i := from; i <= to; i++ {
			e := []byte(fmt.Sprintf("event %d %0190d", i, i))
			if i == 250 {
				e = bytes.Repeat([]byte{'L'}, 9000)
			}
			batch = append(batch, e)
			s.pending[i] = e
		}
		_, err := w.Append(context.Background(), batch...)
		return err
	}
	for i := uint64(1); i <= 400; i += 20 {
		if err := appendRange(i, i+19); err != nil {
			return nil, err
		}
	}
	if err := w.Ack(100); err != nil {
		return nil, err
	}
	if err := w.FlushAcks(0); err != nil {
		return nil, err
	}
	for i := range uint64(100) {
		delete(s.pending, i+1)
	}
	if err := appendRange(401, 410); err != nil {
		return nil, err
	}
	if err := appendRange(411, 420); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if s.db, err = os.ReadFile(filepath.Join(dir, fileName)); err != nil {
		return nil, err
	}
	if s.marks, err = os.ReadFile(filepath.Join(dir, marksFileName)); err != nil {
		return nil, err
	}
	return s, s.classify(filepath.Join(dir, fileName))
}

// classify finds the pages of each kind and the events on each leaf.
func (s *fuzzSpool) classify(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		return err
	}
	defer db.Close()
	m, _ := boltfile.BestMeta(bytes.NewReader(s.db))
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; ; {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			s.classifyPage(uint64(id), info.Type, uint64(info.OverflowCount), m.Root)
			id += 1 + info.OverflowCount
		}
	})
	if err != nil {
		return err
	}
	root := s.db[m.Root*4096 : (m.Root+1)*4096]
	_ = boltfile.LeafElems(root, func(i int, _ uint32, k, v []byte) error {
		s.rootElems = append(s.rootElems, int(m.Root*4096)+boltfile.PageHeaderSize+i*boltfile.LeafElemSize)
		if string(k) == "meta" {
			inline := int(m.Root*4096) + bytes.Index(root, v) + boltfile.BucketHeaderSize
			_ = boltfile.LeafElems(s.db[inline:inline+len(v)-boltfile.BucketHeaderSize], func(j int, _ uint32, _, _ []byte) error {
				s.metaElems = append(s.metaElems, inline+boltfile.PageHeaderSize+j*boltfile.LeafElemSize)
				return nil
			})
		}
		return nil
	})
	return nil
}

func (s *fuzzSpool) classifyPage(id uint64, typ string, overflow, root uint64) {
	kind := map[string]int{"meta": pgMeta, "freelist": pgFreelist, "branch": pgBranch, "leaf": pgLeaf, "free": pgFree}[typ]
	if id == root {
		kind = pgRoot
	}
	s.pages[kind] = append(s.pages[kind], id)
	if kind != pgLeaf {
		return
	}
	var seqs []uint64
	page := s.db[id*4096 : (id+1+overflow)*4096]
	_ = boltfile.LeafElems(page, func(_ int, _ uint32, k, v []byte) error {
		// A frame's events are all on the page of its element.
		first, n := binary.BigEndian.Uint64(k), 1
		if val, err := decodeValue(k, v); err == nil {
			n = val.n
		}
		for i := range n {
			seqs = append(seqs, first+uint64(i))
		}
		return nil
	})
	for o := id; o <= id+overflow; o++ {
		s.leafSeqs[o] = seqs
		if o > id {
			s.pages[pgOverflow] = append(s.pages[pgOverflow], o)
		}
	}
}

// flip applies one flip (kind, sub, index, offset u16, mask) to db or marks
// and adds the events it may damage to damaged.
func (s *fuzzSpool) flip(db, marks, f []byte, damaged map[uint64]bool) {
	kind, sub, idx := int(f[0])%kinds, int(f[1]), int(f[2])
	off, mask := int(f[3])<<8|int(f[4]), f[5]
	if mask == 0 {
		mask = 1
	}
	elem := func(list []int) int { return list[sub%len(list)] }
	pos := -1 // the byte of spool.db flipped
	switch kind {
	case kindPage:
		ids := s.pages[sub%pgKinds]
		if len(ids) == 0 {
			return
		}
		id := ids[idx%len(ids)]
		pos = int(id)*4096 + off%4096
		for _, seq := range s.leafSeqs[id] {
			damaged[seq] = true
		}
	case kindMetaKey:
		// The element's key and value as the undamaged file has them: an
		// earlier flip of its key size must not carry this one off onto
		// another page, where it would damage events unnoticed.
		at := elem(s.metaElems)
		le := binary.LittleEndian
		k := at + int(le.Uint32(s.db[at+4:]))
		pos = k + off%int(le.Uint32(s.db[at+8:])+le.Uint32(s.db[at+12:]))
	case kindRootFlag:
		pos = elem(s.rootElems)
	case kindMetaKSize:
		pos = elem(s.metaElems) + 8 + off%4
	case kindMetaFlag:
		pos = elem(s.metaElems) + off%4
	case kindMarks:
		marks[off%len(marks)] ^= mask
		return
	}
	db[pos] ^= mask
	for _, seq := range s.leafSeqs[uint64(pos/4096)] {
		damaged[seq] = true // whatever the kind, the events on the page it hit
	}
}

// checkPending checks got against the pending events: in order, each with
// its bytes, none that was not pending, every one not damaged present.
func (s *fuzzSpool) checkPending(t *testing.T, got []Entry, damaged map[uint64]bool, when string) {
	seen := map[uint64]bool{}
	var prev uint64
	for _, e := range got {
		if e.Seq <= prev {
			t.Fatalf("%s: event %d after %d", when, e.Seq, prev)
		}
		prev = e.Seq
		want, ok := s.pending[e.Seq]
		if !ok {
			t.Fatalf("%s: event %d is not pending (acknowledged, or never written)", when, e.Seq)
		}
		if !bytes.Equal(want, e.Data) {
			t.Fatalf("%s: event %d has other bytes", when, e.Seq)
		}
		seen[e.Seq] = true
	}
	for seq := range s.pending {
		if !seen[seq] && !damaged[seq] {
			t.Fatalf("%s: event %d lost, though no flip touched its page (%d of %d pending kept)", when, seq, len(got), len(s.pending))
		}
	}
}
