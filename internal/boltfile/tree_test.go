package boltfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// required is the buckets the test files' root bucket must hold.
var required = [][]byte{[]byte("events"), []byte("meta")}

// section reads file through another io.ReaderAt than bytes.Reader.
func section(file []byte) io.ReaderAt {
	return io.NewSectionReader(bytes.NewReader(file), 0, int64(len(file)))
}

// FuzzCheckTrees: the tree check ends, without panicking, on any file, and
// finds the same through any io.ReaderAt. Pages of 512 bytes;
// page 2 is the root bucket's page.
func FuzzCheckTrees(f *testing.F) {
	f.Add(fuzzTreeFile(4, 5, 6), uint16(0))
	f.Add(fuzzTreeFile(4, 5, 3), uint16(1)) // a cycle
	f.Add(fuzzTreeFile(5, 5, 6), uint16(2)) // two parents
	f.Add(fuzzTreeFile(4, 1, 6), uint16(3)) // a meta page
	f.Fuzz(func(t *testing.T, file []byte, free uint16) {
		const ps = 512
		if len(file) < 3*ps || len(file) > 64*ps {
			return
		}
		m := Meta{PageSize: ps, Root: 2, PageCount: uint64(len(file) / ps)}
		var ids []uint64
		if id := uint64(free); id >= 2 && id < m.PageCount {
			ids = append(ids, id)
		}
		err1 := CheckTrees(bytes.NewReader(file), m, ids, required...)
		err2 := CheckTrees(section(file), m, ids, required...)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("bytes.Reader: %v; io.SectionReader: %v", err1, err2)
		}
	})
}

// TestCheckTreesSmall runs the tree check on FuzzCheckTrees's seeds.
func TestCheckTreesSmall(t *testing.T) {
	t.Parallel()
	m := Meta{PageSize: 512, Root: 2, PageCount: 8}
	cases := []struct {
		name    string
		file    []byte
		free    []uint64
		wantErr string
	}{
		{"sound", fuzzTreeFile(4, 5, 6), []uint64{7}, ""},
		{"a page in no tree, not free", fuzzTreeFile(4, 5, 6), nil, "page 7 is in no tree and not free"},
		{"sound, pages past the tree free", fuzzTreeFile(4, 5, 6), []uint64{7}, ""},
		{"cycle", fuzzTreeFile(3, 5, 6), nil, "page 3 is reached twice"},
		{"two parents", fuzzTreeFile(4, 4, 6), nil, "page 4 is reached twice"},
		{"free page in the tree", fuzzTreeFile(4, 5, 6), []uint64{5}, "page 5 is reached twice"},
		{"meta page", fuzzTreeFile(1, 5, 6), nil, "page 1 is not a data page"},
		{"past the file", fuzzTreeFile(4, 8, 6), nil, "page 8 is not a data page"},
		{"root bucket page", fuzzTreeFile(4, 2, 6), nil, "page 2 is reached twice"},
		{"branch keys out of order", withByte(fuzzTreeFile(4, 5, 6), 3*512+65, 'a'), []uint64{7}, "branch page 3: key 1 out of order"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.ReaderAt{bytes.NewReader(tc.file), section(tc.file)} {
				err := CheckTrees(r, m, tc.free, required...)
				if tc.wantErr == "" {
					require.NoError(t, err)
				} else {
					require.ErrorContains(t, err, tc.wantErr)
				}
			}
		})
	}
}

// withByte returns file with the byte at off set to b.
func withByte(file []byte, off int, b byte) []byte {
	file[off] = b
	return file
}

// fuzzTreeFile returns 8 pages of 512 bytes: page 2 a root bucket leaf
// holding bucket "events" whose root is page 3 (and an empty inline "meta"), a branch with children a, b, c.
func fuzzTreeFile(a, b, c uint64) []byte {
	const ps = 512
	file := make([]byte, 8*ps)
	le := binary.LittleEndian
	header := func(id uint64, flags, count uint16) []byte {
		p := file[id*ps : (id+1)*ps]
		le.PutUint64(p[0:], id)
		le.PutUint16(p[8:], flags)
		le.PutUint16(p[10:], count)
		return p
	}
	root := header(2, leafPageFlag, 2)
	// "events": a bucket whose root is page 3.
	le.PutUint32(root[16:], bucketLeafFlag)
	le.PutUint32(root[20:], 32) // key at 48
	le.PutUint32(root[24:], 6)
	le.PutUint32(root[28:], BucketHeaderSize)
	copy(root[48:], "events")
	le.PutUint64(root[54:], 3)
	// "meta": an inline bucket, an empty leaf.
	le.PutUint32(root[32:], bucketLeafFlag)
	le.PutUint32(root[36:], 38) // key at 70
	le.PutUint32(root[40:], 4)
	le.PutUint32(root[44:], BucketHeaderSize+PageHeaderSize)
	copy(root[70:], "meta")
	le.PutUint16(root[74+BucketHeaderSize+8:], leafPageFlag)
	branch := header(3, branchPageFlag, 3)
	for i, child := range []uint64{a, b, c} {
		e := branch[PageHeaderSize+i*LeafElemSize:]
		le.PutUint32(e[0:], uint32(LeafElemSize*(3-i)+i)) // keys "a", "b", "c" at 64..66
		le.PutUint32(e[4:], 1)
		le.PutUint64(e[8:], child)
		branch[PageHeaderSize+3*LeafElemSize+i] = byte('a' + i)
	}
	for id := uint64(4); id < 8; id++ {
		header(id, leafPageFlag, 0)
	}
	return file
}

// TestCheckTreesRandom is FuzzCheckTrees's property on random damage to its
// seed (the fuzzer finds more, given the time): page headers and branch
// elements overwritten with small numbers, so that ids and counts land in
// range and the walk gets deep.
func TestCheckTreesRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	m := Meta{PageSize: 512, Root: 2, PageCount: 8}
	for range 20000 {
		file := fuzzTreeFile(4, 5, 6)
		for range 1 + r.IntN(6) {
			at := r.IntN(8)*512 + r.IntN(PageHeaderSize+3*LeafElemSize)
			file[at] = byte(r.IntN(9))
		}
		err1 := CheckTrees(bytes.NewReader(file), m, nil, required...)
		err2 := CheckTrees(section(file), m, nil, required...)
		require.Equal(t, fmt.Sprint(err1), fmt.Sprint(err2))
	}
}

// TestCheckTreesRootElements: the root bucket holds the two buckets, each
// element within its page, the inline meta bucket's elements values within
// its value, in order; anything else is damage found before bbolt reads it.
func TestCheckTreesRootElements(t *testing.T) {
	m := Meta{PageSize: 512, Root: 2, PageCount: 8}
	le := binary.LittleEndian
	const root = 2 * 512
	// inlineMeta makes the meta bucket hold n elements of the given flags
	// and key sizes, keys "a", "b", ... of one byte each, values empty.
	inlineMeta := func(f []byte, flags []uint32, ksize []uint32, keys string) {
		page := root + 74 + BucketHeaderSize
		le.PutUint16(f[page+10:], uint16(len(flags)))
		le.PutUint32(f[root+44:], uint32(BucketHeaderSize+PageHeaderSize+len(flags)*(LeafElemSize+1)))
		for i := range flags {
			e := page + PageHeaderSize + i*LeafElemSize
			le.PutUint32(f[e:], flags[i])
			le.PutUint32(f[e+4:], uint32(len(flags)*LeafElemSize-i*LeafElemSize+i))
			le.PutUint32(f[e+8:], ksize[i])
			f[page+PageHeaderSize+len(flags)*LeafElemSize+i] = keys[i]
		}
	}
	cases := []struct {
		name    string
		damage  func(f []byte)
		wantErr string
	}{
		{"sound", func(f []byte) {}, ""},
		{"sound inline values", func(f []byte) { inlineMeta(f, []uint32{0, 0}, []uint32{1, 1}, "ab") }, ""},
		{"events lost its bucket flag", func(f []byte) { f[root+16] = 0 }, `element 0 ("events") has flags 0`},
		{"meta lost its bucket flag", func(f []byte) { f[root+32] = 0 }, `element 1 ("meta") has flags 0`},
		{"element key out of the page", func(f []byte) { le.PutUint32(f[root+24:], 1<<27) }, "element 0 out of its page"},
		{"element count past the page", func(f []byte) { le.PutUint16(f[root+10:], 40) }, "40 elements do not fit"},
		{"no events bucket", func(f []byte) { f[root+48] = 'x' }, `no bucket "events"`},
		{"inline value flagged a bucket", func(f []byte) { inlineMeta(f, []uint32{0, 1}, []uint32{1, 1}, "ab") }, `element 1 ("b") has flags 0x1`},
		{"inline key size 2^27", func(f []byte) { inlineMeta(f, []uint32{0, 0}, []uint32{1, 1 << 27}, "ab") }, "element 1 out of its page"},
		{"inline keys out of order", func(f []byte) { inlineMeta(f, []uint32{0, 0}, []uint32{1, 1}, "ba") }, "out of order"},
		{"inline page a branch", func(f []byte) { le.PutUint16(f[root+74+BucketHeaderSize+8:], branchPageFlag) }, "its page is not a leaf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fuzzTreeFile(4, 5, 6)
			tc.damage(f)
			err := CheckTrees(bytes.NewReader(f), m, []uint64{7}, required...)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestCheckTreesLeafOutsideBranchRange: a leaf whose keys lie outside the
// range its branch element gives it (a branch key that lost a bit) is
// damage: bbolt's Seek would go to the wrong leaf and Read skip events
// (FuzzOpen found Read returning 292 of 320 pending).
func TestCheckTreesLeafOutsideBranchRange(t *testing.T) {
	t.Parallel()
	file := fuzzTreeFile(4, 5, 6)
	le := binary.LittleEndian
	// Leaf 5 (under key "b", before "c") gets one element, key "d".
	leaf := file[5*512 : 6*512]
	le.PutUint16(leaf[10:], 1)
	le.PutUint32(leaf[16+4:], 16) // key at 16+16
	le.PutUint32(leaf[16+8:], 1)
	leaf[32] = 'd'
	m := Meta{PageSize: 512, Root: 2, PageCount: 8}
	require.ErrorContains(t, CheckTrees(bytes.NewReader(file), m, []uint64{7}, required...), "leaf page 5: key 0 outside the range")
	leaf[32] = 'b' // in [b, c): sound
	require.NoError(t, CheckTrees(bytes.NewReader(file), m, []uint64{7}, required...))
}
