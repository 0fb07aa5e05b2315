package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeRecord: decoding arbitrary bytes never panics, a record that
// decodes re-encodes to the same bytes, and encoding then decoding gives back
// the event.
func FuzzDecodeRecord(f *testing.F) {
	key := seqKey(42)
	f.Add(key, encodeRecord(key, 1700000000123456789, []byte("ptp4l[365195.391]: master offset -1 s2 freq -3972")), int64(5), []byte("x"))
	f.Add(key, encodeRecord(key, 0, nil), int64(-1), []byte{})
	f.Add([]byte("short"), []byte{1, 2, 3}, int64(0), []byte("\x00\r\xff"))
	f.Fuzz(func(t *testing.T, k, v []byte, ts int64, data []byte) {
		if gotTS, gotData, err := decodeRecord(k, v); err == nil {
			if !bytes.Equal(encodeRecord(k, gotTS, gotData), v) {
				t.Fatalf("record %x under key %x decodes but does not re-encode the same", v, k)
			}
		}
		if len(k) != keySize {
			return
		}
		rec := encodeRecord(k, ts, data)
		gotTS, gotData, err := decodeRecord(k, rec)
		if err != nil || gotTS != ts || !bytes.Equal(gotData, data) {
			t.Fatalf("round trip of %q at %d: got %q at %d, %v", data, ts, gotData, gotTS, err)
		}
		// The checksum covers the key: the record under another key fails.
		other := bytes.Clone(k)
		other[7] ^= 1
		if _, _, err := decodeRecord(other, rec); err == nil {
			t.Fatalf("record accepted under key %x", other)
		}
		if len(rec) > recordHeader {
			bad := bytes.Clone(rec)
			bad[len(bad)-1] ^= 0x80
			if _, _, err := decodeRecord(k, bad); err == nil {
				t.Fatalf("flipped bit not caught")
			}
		}
	})
}

// FuzzScanPages: the salvage page parser never panics whatever it reads, and
// every pair it reports lies inside the input.
func FuzzScanPages(f *testing.F) {
	f.Add(make([]byte, 4096))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Fuzz(func(t *testing.T, buf []byte) {
		var sum uint32
		parseLeaf(buf, 0, func(k, v []byte) {
			// Touch every byte: a slice past the input would fault here.
			sum = recordSum(k, v)
		})
		_ = sum
		if err := scanReader(bytes.NewReader(buf), int64(len(buf)), func(k, v []byte) {}); err != nil {
			t.Fatalf("scanReader: %v", err)
		}
	})
}

// FuzzCheckTrees: the tree check ends, without panicking, on any file, and
// reads the same through a mapping as through pread(2). Pages of 512 bytes;
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
		m := boltMeta{pageSize: ps, root: 2, pgid: uint64(len(file) / ps)}
		var ids []uint64
		if id := uint64(free); id >= 2 && id < m.pgid {
			ids = append(ids, id)
		}
		err1 := checkTrees(bytes.NewReader(file), m, ids)
		err2 := checkTrees(mapView(file), m, ids)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("pread: %v; mapping: %v", err1, err2)
		}
	})
}

// TestCheckTreesSmall runs the tree check on FuzzCheckTrees's seeds.
func TestCheckTreesSmall(t *testing.T) {
	t.Parallel()
	m := boltMeta{pageSize: 512, root: 2, pgid: 8}
	cases := []struct {
		name    string
		file    []byte
		free    []uint64
		wantErr string
	}{
		{"sound", fuzzTreeFile(4, 5, 6), nil, ""},
		{"sound, pages past the tree free", fuzzTreeFile(4, 5, 6), []uint64{7}, ""},
		{"cycle", fuzzTreeFile(3, 5, 6), nil, "page 3 is reached twice"},
		{"two parents", fuzzTreeFile(4, 4, 6), nil, "page 4 is reached twice"},
		{"free page in the tree", fuzzTreeFile(4, 5, 6), []uint64{5}, "page 5 is reached twice"},
		{"meta page", fuzzTreeFile(1, 5, 6), nil, "page 1 is not a data page"},
		{"past the file", fuzzTreeFile(4, 8, 6), nil, "page 8 is not a data page"},
		{"root bucket page", fuzzTreeFile(4, 2, 6), nil, "page 2 is reached twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.ReaderAt{bytes.NewReader(tc.file), mapView(tc.file)} {
				err := checkTrees(r, m, tc.free)
				if tc.wantErr == "" {
					require.NoError(t, err)
				} else {
					require.ErrorContains(t, err, tc.wantErr)
				}
			}
		})
	}
}

// fuzzTreeFile returns 8 pages of 512 bytes: page 2 a root bucket leaf
// holding bucket "e" whose root is page 3, a branch with children a, b, c.
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
	root := header(2, leafPageFlag, 1)
	le.PutUint32(root[16:], bucketLeafFlag)
	le.PutUint32(root[20:], leafElemSize) // key right after the element
	le.PutUint32(root[24:], 1)
	le.PutUint32(root[28:], bucketHeader)
	root[32] = 'e'
	le.PutUint64(root[33:], 3)
	branch := header(3, branchPageFlag, 3)
	for i, child := range []uint64{a, b, c} {
		e := branch[pageHeaderSize+i*branchElemSize:]
		le.PutUint32(e[0:], uint32(branchElemSize*(3-i)))
		le.PutUint32(e[4:], 1)
		le.PutUint64(e[8:], child)
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
	m := boltMeta{pageSize: 512, root: 2, pgid: 8}
	for range 20000 {
		file := fuzzTreeFile(4, 5, 6)
		for range 1 + r.IntN(6) {
			at := r.IntN(8)*512 + r.IntN(pageHeaderSize+3*branchElemSize)
			file[at] = byte(r.IntN(9))
		}
		err1 := checkTrees(bytes.NewReader(file), m, nil)
		err2 := checkTrees(mapView(file), m, nil)
		require.Equal(t, fmt.Sprint(err1), fmt.Sprint(err2))
	}
}
