package wal

import (
	"encoding/binary"
	"io"
	"os"
)

// The page scanner reads a damaged bbolt file without bbolt: it walks every
// page, parses whatever looks like a leaf, and hands each key/value pair to a
// callback. It trusts nothing it reads: every offset is bounds-checked, and
// the caller keeps only records whose checksum holds. Layout (bbolt 1.3+,
// little-endian on the platforms evspool runs on):
//
//	page header: id u64 | flags u16 | count u16 | overflow u32   (16 bytes)
//	leaf element: flags u32 | pos u32 | ksize u32 | vsize u32   (16 bytes)
//	meta (after the page header): magic u32 | version u32 | page size u32 ...
const (
	pageHeaderSize  = 16
	leafElemSize    = 16
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	boltMagic       = 0xED0CDAED
	bucketHeader    = 16 // root pgid u64 | sequence u64; root 0 means inline
	maxOverflowScan = 64 << 20
)

// scanPages calls fn for every key/value pair found in leaf pages of the file
// f, inline buckets included. Pairs may repeat (old copies of pages).
func scanPages(f *os.File, fn func(key, val []byte)) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return scanReader(f, fi.Size(), fn)
}

// scanReader is scanPages on the size bytes of f.
func scanReader(f io.ReaderAt, size int64, fn func(key, val []byte)) error {
	psize := int64(guessPageSize(f))
	hdr := make([]byte, pageHeaderSize)
	for off := int64(0); off+pageHeaderSize <= size; off += psize {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return err
		}
		if binary.LittleEndian.Uint16(hdr[8:10])&leafPageFlag == 0 {
			continue
		}
		n := min((1+int64(binary.LittleEndian.Uint32(hdr[12:16])))*psize, size-off, maxOverflowScan)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return err
		}
		parseLeaf(buf, 0, fn)
	}
	return nil
}

// guessPageSize reads the page size from a meta page whose checksum holds
// (the one bbolt would use), else assumes the OS page size, with which
// evspool creates its spools. A meta page's page size is trusted only
// under its checksum: a flipped bit in page 0's (4096 read as 8192) made
// the scan step over every other page, and salvage lose their events
// (FuzzOpen, testdata/fuzz/FuzzOpen/b3149b70d6873216).
func guessPageSize(f io.ReaderAt) int {
	if m, ok := bestMeta(f); ok {
		return int(m.pageSize)
	}
	return int(costPage)
}

// parseLeaf parses buf as a leaf page (header included) and recurses into
// inline buckets of the top level.
func parseLeaf(buf []byte, depth int, fn func(key, val []byte)) {
	if len(buf) < pageHeaderSize || binary.LittleEndian.Uint16(buf[8:10])&leafPageFlag == 0 {
		return
	}
	count := int(binary.LittleEndian.Uint16(buf[10:12]))
	for i := 0; i < count; i++ {
		at := pageHeaderSize + i*leafElemSize
		if at+leafElemSize > len(buf) {
			return
		}
		e := buf[at : at+leafElemSize]
		flags := binary.LittleEndian.Uint32(e[0:4])
		kStart := uint64(at) + uint64(binary.LittleEndian.Uint32(e[4:8]))
		kEnd := kStart + uint64(binary.LittleEndian.Uint32(e[8:12]))
		vEnd := kEnd + uint64(binary.LittleEndian.Uint32(e[12:16]))
		if vEnd > uint64(len(buf)) {
			continue
		}
		key, val := buf[kStart:kEnd], buf[kEnd:vEnd]
		if flags&bucketLeafFlag != 0 {
			// The spool's only inline bucket (meta) sits in the root leaf:
			// one level. Each level multiplies the work on a crafted page
			// (elements may all point at the same bytes): three levels made
			// one page cost 437^3 parses.
			if depth < 1 && len(val) > bucketHeader && binary.LittleEndian.Uint64(val[0:8]) == 0 {
				parseLeaf(val[bucketHeader:], depth+1, fn)
			}
			continue
		}
		fn(key, val)
	}
}
