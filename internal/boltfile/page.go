package boltfile

import (
	"encoding/binary"
	"fmt"
)

// bbolt's file layout (go.etcd.io/bbolt, internal/common), decoded here and
// nowhere else. Little-endian, on every platform evspool runs on:
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
// the element; a leaf's value follows its key. A branch element has the
// size of a leaf element.
const (
	// PageHeaderSize is the bytes of a page's header, before its elements.
	PageHeaderSize = 16
	// LeafElemSize is the bytes of a leaf element's header (and of a branch
	// element), before its key.
	LeafElemSize = 16
	// BucketHeaderSize is the bytes of a bucket value before an inline
	// bucket's page.
	BucketHeaderSize = 16

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01 // a leaf element whose value is a bucket
	// maxOverflowScan bounds what Scan reads of one page: a damaged
	// overflow count must not make it allocate more.
	maxOverflowScan = 64 << 20
)

type pageHeader struct {
	id       uint64
	flags    uint16
	count    int    // elements, or free page ids
	overflow uint64 // pages after this one that it takes
}

// decodeHeader decodes the header at the start of b (PageHeaderSize bytes
// at least).
func decodeHeader(b []byte) pageHeader {
	le := binary.LittleEndian
	return pageHeader{id: le.Uint64(b[0:8]), flags: le.Uint16(b[8:10]),
		count: int(le.Uint16(b[10:12])), overflow: uint64(le.Uint32(b[12:16]))}
}

// span is the bytes the page takes with its overflow, in pages of ps bytes.
func (h pageHeader) span(ps uint64) uint64 { return (1 + h.overflow) * ps }

// elemAt is the offset of element i (leaf or branch: the same size).
func elemAt(i int) uint64 { return PageHeaderSize + uint64(i)*LeafElemSize }

// fitting is how many of count elements lie in page p (header included).
func fitting(p []byte, count int) int {
	return max(0, min(count, (len(p)-PageHeaderSize)/LeafElemSize))
}

// leafElem decodes leaf element i from its header e: its flags and key
// [k0, k1) and value [k1, v1) offsets in the page.
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

// LeafElems calls fn for every element of leaf page p (a page with its
// overflow, or an inline bucket's page), each checked to lie in p: its
// index, flags, key and value. It stops at the first error, its own or fn's.
func LeafElems(p []byte, fn func(i int, flags uint32, k, v []byte) error) error {
	if len(p) < PageHeaderSize {
		return fmt.Errorf("%d bytes: shorter than a page header", len(p))
	}
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

// parseLeaf is LeafElems for salvage: it skips bad elements and enters
// top-level inline buckets.
func parseLeaf(p []byte, depth int, fn func(key, val []byte)) {
	if len(p) < PageHeaderSize {
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
			// One level of inline buckets (a bucket in the root leaf)
			// bounds the work a crafted page can cause.
			if root, inline, ok := bucketValue(val); ok && root == 0 {
				parseLeaf(inline, depth+1, fn)
			}
		}
	}
}

// bucketValue decodes a bucket's root page id and inline page (root 0).
func bucketValue(v []byte) (root uint64, inline []byte, ok bool) {
	if len(v) < BucketHeaderSize {
		return 0, nil, false
	}
	return binary.LittleEndian.Uint64(v[0:8]), v[BucketHeaderSize:], true
}

// freelistIDs returns where a freelist page's ids start (in u64s after the
// header) and how many there are. b holds the header and 8 bytes more.
func freelistIDs(b []byte) (first, count uint64) {
	if count = uint64(decodeHeader(b).count); count == 0xFFFF {
		return 1, binary.LittleEndian.Uint64(b[PageHeaderSize:])
	}
	return 0, count
}
