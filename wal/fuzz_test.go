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
// decodes re-encodes to the same bytes (in its own version), and encoding
// then decoding gives back the event and its stamp, in both versions.
func FuzzDecodeRecord(f *testing.F) {
	key := seqKey(42)
	ev := []byte("ptp4l[365195.391]: master offset -1 s2 freq -3972")
	f.Add(key, encodeRecord(key, stamp{1700000000123456789, 3600e9}, ev), int64(5), int64(7), []byte("x"))
	f.Add(key, encodeRecordV1(key, 1700000000123456789, ev), int64(5), int64(0), []byte("x"))
	f.Add(key, encodeRecord(key, stamp{}, nil), int64(-1), int64(-1), []byte{})
	f.Add([]byte("short"), []byte{1, 2, 3}, int64(0), int64(0), []byte("\x00\r\xff"))
	f.Fuzz(func(t *testing.T, k, v []byte, ts, boot int64, data []byte) {
		if at, gotData, err := decodeStamped(k, v); err == nil {
			again := encodeRecordV1(k, at.wall, gotData)
			if isV2(v) && len(v)-len(gotData) == recordHeader {
				again = encodeRecord(k, at, gotData)
			}
			if !bytes.Equal(again, v) {
				t.Fatalf("record %x under key %x decodes but does not re-encode the same", v, k)
			}
		}
		if len(k) != keySize {
			return
		}
		ts = max(min(ts, 1<<62-1), -1<<62) // what a version 2 record holds
		rec := encodeRecord(k, stamp{ts, boot}, data)
		at, gotData, err := decodeStamped(k, rec)
		if err != nil || at != (stamp{ts, boot}) || !bytes.Equal(gotData, data) || recordDataLen(rec) != len(data) {
			t.Fatalf("round trip of %q at %d/%d: got %q at %+v, %v", data, ts, boot, gotData, at, err)
		}
		if ts >= 0 { // records of earlier versions are still read
			old := encodeRecordV1(k, ts, data)
			at, gotData, err := decodeStamped(k, old)
			if err != nil || at != (stamp{wall: ts}) || !bytes.Equal(gotData, data) || recordDataLen(old) != len(data) {
				t.Fatalf("version 1 record of %q at %d: got %q at %+v, %v", data, ts, gotData, at, err)
			}
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

// FuzzDecodeValue: decoding arbitrary bytes as a value (a record or a
// frame) never panics, and what decodes holds together: its events' bytes
// lie inside the value, a frame's add up to it and re-encode to the same
// bytes. A frame made of the fuzzer's events decodes back to them, under
// its key only, and a flipped bit anywhere in it is caught.
func FuzzDecodeValue(f *testing.F) {
	key := seqKey(42)
	evs := [][]byte{[]byte("ptp4l[365195.391]: master offset -1 s2 freq -3972"), {}, []byte("phc2sys")}
	f.Add(key, encodeFrameInto(make([]byte, frameSize(evs)), key, stamp{1700000000123456789, 3600e9}, evs), []byte("a\x00bc\xffd"), int64(5), int64(7))
	f.Add(key, encodeRecord(key, stamp{1, 2}, evs[0]), []byte("x"), int64(-1), int64(0))
	f.Add([]byte("short"), []byte{1, 2, 3}, []byte{}, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, k, v, data []byte, ts, boot int64) {
		if val, err := decodeValue(k, v); err == nil {
			var got [][]byte
			val.each(0, func(seq uint64, e []byte) bool {
				if seq != val.first+uint64(len(got)) {
					t.Fatalf("event %d numbered %d", len(got), seq)
				}
				got = append(got, e)
				return true
			})
			if len(got) != val.n {
				t.Fatalf("%d events of %d", len(got), val.n)
			}
			if val.n > 1 {
				again := encodeFrameInto(make([]byte, frameSize(got)), k, val.at, got)
				if !bytes.Equal(again, v) {
					t.Fatalf("frame %x decodes but does not re-encode the same", v)
				}
			}
		}
		if len(k) != keySize {
			return
		}
		// The fuzzer's events: data cut where it has a 0 byte.
		events := bytes.Split(data, []byte{0})
		if len(events) < 2 {
			events = append(events, []byte("second"))
		}
		ts = max(min(ts, 1<<62-1), -1<<62)
		at := stamp{ts, max(boot, 0)}
		fr := encodeFrameInto(make([]byte, frameSize(events)), k, at, events)
		val, err := decodeValue(k, fr)
		if err != nil || val.n != len(events) || val.at != at || val.first != binary.BigEndian.Uint64(k) {
			t.Fatalf("frame of %q at %+v: %+v, %v", events, at, val, err)
		}
		i := 0
		val.each(0, func(_ uint64, e []byte) bool {
			if !bytes.Equal(e, events[i]) {
				t.Fatalf("event %d: %q, want %q", i, e, events[i])
			}
			i++
			return true
		})
		if val.cost() != entryCost(len(fr)-recordHeader) {
			t.Fatalf("frame's cost %d, not that of its %d bytes", val.cost(), len(fr)-recordHeader)
		}
		other := bytes.Clone(k)
		other[7] ^= 1
		if _, err := decodeValue(other, fr); err == nil {
			t.Fatalf("frame accepted under key %x", other)
		}
		bit := int(uint64(ts) % uint64(len(fr)*8))
		bad := bytes.Clone(fr)
		bad[bit/8] ^= 1 << (bit % 8)
		if val, err := decodeValue(k, bad); err == nil {
			t.Fatalf("flipped bit %d of %d not caught: %+v", bit, len(fr)*8, val)
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
		if err := scanPages(bytes.NewReader(buf), int64(len(buf)), func(k, v []byte) {}); err != nil {
			t.Fatalf("scanPages: %v", err)
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
	le.PutUint32(root[28:], bucketHeader)
	copy(root[48:], "events")
	le.PutUint64(root[54:], 3)
	// "meta": an inline bucket, an empty leaf.
	le.PutUint32(root[32:], bucketLeafFlag)
	le.PutUint32(root[36:], 38) // key at 70
	le.PutUint32(root[40:], 4)
	le.PutUint32(root[44:], bucketHeader+pageHeaderSize)
	copy(root[70:], "meta")
	le.PutUint16(root[74+bucketHeader+8:], leafPageFlag)
	branch := header(3, branchPageFlag, 3)
	for i, child := range []uint64{a, b, c} {
		e := branch[pageHeaderSize+i*branchElemSize:]
		le.PutUint32(e[0:], uint32(branchElemSize*(3-i)+i)) // keys "a", "b", "c" at 64..66
		le.PutUint32(e[4:], 1)
		le.PutUint64(e[8:], child)
		branch[pageHeaderSize+3*branchElemSize+i] = byte('a' + i)
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

// TestCheckTreesRootElements: the root bucket holds the two buckets, each
// element within its page, the inline meta bucket's elements values within
// its value, in order; anything else is damage found before bbolt reads it.
func TestCheckTreesRootElements(t *testing.T) {
	m := boltMeta{pageSize: 512, root: 2, pgid: 8}
	le := binary.LittleEndian
	const root = 2 * 512
	// inlineMeta makes the meta bucket hold n elements of the given flags
	// and key sizes, keys "a", "b", ... of one byte each, values empty.
	inlineMeta := func(f []byte, flags []uint32, ksize []uint32, keys string) {
		page := root + 74 + bucketHeader
		le.PutUint16(f[page+10:], uint16(len(flags)))
		le.PutUint32(f[root+44:], uint32(bucketHeader+pageHeaderSize+len(flags)*(leafElemSize+1)))
		for i := range flags {
			e := page + pageHeaderSize + i*leafElemSize
			le.PutUint32(f[e:], flags[i])
			le.PutUint32(f[e+4:], uint32(len(flags)*leafElemSize-i*leafElemSize+i))
			le.PutUint32(f[e+8:], ksize[i])
			f[page+pageHeaderSize+len(flags)*leafElemSize+i] = keys[i]
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
		{"inline page a branch", func(f []byte) { le.PutUint16(f[root+74+bucketHeader+8:], branchPageFlag) }, "its page is not a leaf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fuzzTreeFile(4, 5, 6)
			tc.damage(f)
			err := checkTrees(bytes.NewReader(f), m, []uint64{7})
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
	m := boltMeta{pageSize: 512, root: 2, pgid: 8}
	require.ErrorContains(t, checkTrees(bytes.NewReader(file), m, []uint64{7}), "leaf page 5: key 0 outside the range")
	leaf[32] = 'b' // in [b, c): sound
	require.NoError(t, checkTrees(bytes.NewReader(file), m, []uint64{7}))
}
