package wal

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt's file layout (go.etcd.io/bbolt, internal/common), decoded here and
// nowhere else, for the checks made before bbolt maps a file (filecheck.go,
// treecheck.go) and for salvage, which reads a damaged file without bbolt
// (salvagescan.go). Little-endian, on every platform evspool runs on:
//
//	page header     id u64 | flags u16 | count u16 | overflow u32
//	leaf element    flags u32 | pos u32 | ksize u32 | vsize u32
//	branch element  pos u32 | ksize u32 | child page id u64
//	bucket value    root page id u64 | sequence u64, then, for root 0 (an
//	                inline bucket), the bucket's leaf page
//	meta page       header | magic u32 | version u32 | page size u32 |
//	                flags u32 | root bucket value | freelist page id u64 |
//	                page count u64 | txid u64 | FNV-64a of the 56 bytes before
//	freelist page   header | count page ids u64 (a count of 0xFFFF is
//	                instead in a u64 before the ids)
//
// A page's overflow pages follow it. An element's key starts pos bytes after
// the element; a leaf's value follows its key. Every offset read is checked.
const (
	pageHeaderSize   = 16
	leafElemSize     = 16
	branchElemSize   = 16
	bucketHeader     = 16
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01 // a leaf element whose value is a bucket
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	metaChecksumAt   = 56
	noFreelist       = ^uint64(0) // the freelist page id when it is not written
	// maxOverflowScan bounds what salvage reads of one page: a damaged
	// overflow count must not make it allocate more.
	maxOverflowScan = 64 << 20
)

type pageHeader struct {
	id       uint64
	flags    uint16
	count    int    // elements, or free page ids
	overflow uint64 // pages after this one that it takes
}

func decodeHeader(b []byte) pageHeader {
	le := binary.LittleEndian
	return pageHeader{id: le.Uint64(b[0:8]), flags: le.Uint16(b[8:10]),
		count: int(le.Uint16(b[10:12])), overflow: uint64(le.Uint32(b[12:16]))}
}

// span is the bytes the page takes with its overflow, in pages of ps bytes.
func (h pageHeader) span(ps uint64) uint64 { return (1 + h.overflow) * ps }

// elemAt is the offset of element i (leaf or branch: the same size).
func elemAt(i int) uint64 { return pageHeaderSize + uint64(i)*leafElemSize }

// fitting is how many of count elements lie in page p (header included).
func fitting(p []byte, count int) int {
	return max(0, min(count, (len(p)-pageHeaderSize)/leafElemSize))
}

// leafElem decodes leaf element i: its flags and key [k0, k1) and value
// [k1, v1) offsets in the page.
func leafElem(e []byte, i int) (flags uint32, k0, k1, v1 uint64) {
	le := binary.LittleEndian
	k0 = elemAt(i) + uint64(le.Uint32(e[4:8]))
	k1 = k0 + uint64(le.Uint32(e[8:12]))
	return le.Uint32(e[0:4]), k0, k1, k1 + uint64(le.Uint32(e[12:16]))
}

// leafAt returns leaf element i of p; ok is false if it overruns p.
func leafAt(p []byte, i int) (flags uint32, k, v []byte, ok bool) {
	flags, k0, k1, v1 := leafElem(p[elemAt(i):], i)
	if v1 > uint64(len(p)) {
		return 0, nil, nil, false
	}
	return flags, p[k0:k1], p[k1:v1], true
}

// branchAt returns branch element i of p; ok is false if it overruns p.
func branchAt(p []byte, i int) (child uint64, k []byte, ok bool) {
	le, e := binary.LittleEndian, p[elemAt(i):]
	k0 := elemAt(i) + uint64(le.Uint32(e[0:4]))
	k1 := k0 + uint64(le.Uint32(e[4:8]))
	if k1 > uint64(len(p)) {
		return 0, nil, false
	}
	return le.Uint64(e[8:16]), p[k0:k1], true
}

// leafElems calls fn for every element of leaf page p, each checked to lie in p.
func leafElems(p []byte, fn func(i int, flags uint32, k, v []byte) error) error {
	count := decodeHeader(p).count
	if fitting(p, count) < count {
		return fmt.Errorf("%d elements do not fit in %d bytes", count, len(p))
	}
	for i := range count {
		flags, k, v, ok := leafAt(p, i)
		if !ok {
			return fmt.Errorf("element %d out of its page", i)
		}
		if err := fn(i, flags, k, v); err != nil {
			return err
		}
	}
	return nil
}

// parseLeaf is leafElems for salvage: it skips bad elements and enters
// top-level inline buckets.
func parseLeaf(p []byte, depth int, fn func(key, val []byte)) {
	if len(p) < pageHeaderSize {
		return
	}
	h := decodeHeader(p)
	if h.flags&leafPageFlag == 0 {
		return
	}
	for i := range fitting(p, h.count) {
		flags, key, val, ok := leafAt(p, i)
		switch {
		case !ok:
		case flags&bucketLeafFlag == 0:
			fn(key, val)
		case depth < 1:
			// Only meta is inline, in the root leaf: one level bounds the
			// work a crafted page can cause.
			if root, inline, ok := bucketValue(val); ok && root == 0 {
				parseLeaf(inline, depth+1, fn)
			}
		}
	}
}

// bucketValue decodes a bucket's root page id and inline page (root 0).
func bucketValue(v []byte) (root uint64, inline []byte, ok bool) {
	if len(v) < bucketHeader {
		return 0, nil, false
	}
	return binary.LittleEndian.Uint64(v[0:8]), v[bucketHeader:], true
}

// freelistIDs returns where a freelist page's ids start (in u64s after the
// header) and how many there are.
func freelistIDs(b []byte) (first, count uint64) {
	if count = uint64(decodeHeader(b).count); count == 0xFFFF {
		return 1, binary.LittleEndian.Uint64(b[pageHeaderSize:])
	}
	return 0, count
}

// boltMeta is what evspool uses of a meta page.
type boltMeta struct {
	pageSize                   uint32
	root, freelist, pgid, txid uint64
}

// bestMeta returns the valid meta page with the highest txid, the one bbolt
// uses, probing page 1 at each possible page size as bbolt does.
func bestMeta(f io.ReaderAt) (boltMeta, bool) {
	var best boltMeta
	found := false
	for _, off := range []int64{0, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10} {
		m, ok := readMeta(f, off)
		if ok && (off == 0 || int64(m.pageSize) == off) && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	return best, found
}

// readMeta reads the meta page at off; ok if magic, version, checksum and
// page size hold.
func readMeta(f io.ReaderAt, off int64) (boltMeta, bool) {
	buf := make([]byte, pageHeaderSize+metaChecksumAt+8)
	if _, err := f.ReadAt(buf, off); err != nil {
		return boltMeta{}, false
	}
	b := buf[pageHeaderSize:]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(b[:metaChecksumAt])
	ps := le.Uint32(b[8:12])
	if le.Uint32(b[0:4]) != boltMagic || le.Uint32(b[4:8]) != boltVersion ||
		le.Uint64(b[metaChecksumAt:]) != h.Sum64() || ps < 512 || ps > 1<<16 || ps&(ps-1) != 0 {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: ps, root: le.Uint64(b[16:24]), freelist: le.Uint64(b[32:40]),
		pgid: le.Uint64(b[40:48]), txid: le.Uint64(b[48:56])}, true
}

// pageReader reads a file's pages of ps bytes through r.
type pageReader struct {
	r   io.ReaderAt
	ps  int64
	hdr [pageHeaderSize]byte
}

func (pr *pageReader) header(id uint64) (pageHeader, error) {
	if _, err := pr.r.ReadAt(pr.hdr[:], int64(id)*pr.ps); err != nil {
		return pageHeader{}, err
	}
	return decodeHeader(pr.hdr[:]), nil
}

// read reads n bytes from page id's first on.
func (pr *pageReader) read(id, n uint64) ([]byte, error) {
	p := make([]byte, n)
	if _, err := pr.r.ReadAt(p, int64(id)*pr.ps); err != nil {
		return nil, err
	}
	return p, nil
}

// whole reads page id with its overflow, within size and maxOverflowScan.
func (pr *pageReader) whole(id uint64, h pageHeader, size int64) ([]byte, error) {
	off := int64(id) * pr.ps
	p := make([]byte, min(int64(h.span(uint64(pr.ps))), size-off, maxOverflowScan))
	if _, err := pr.r.ReadAt(p, off); err != nil && err != io.EOF {
		return nil, err
	}
	return p, nil
}
