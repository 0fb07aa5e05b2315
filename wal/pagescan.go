package wal

import (
	"io"
	"os"
)

// The page scanner reads a damaged bbolt file without bbolt: it walks every
// page, parses whatever looks like a leaf, and hands each key/value pair to a
// callback. It trusts nothing it reads (pages.go checks every offset), and
// the caller keeps only records whose checksum holds.

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
	pr := &pageReader{r: f, ps: int64(guessPageSize(f))}
	for id := uint64(0); int64(id)*pr.ps+pageHeaderSize <= size; id++ {
		h, err := pr.header(id)
		if err != nil {
			return err
		}
		if h.flags&leafPageFlag == 0 {
			continue
		}
		p, err := pr.whole(id, h, size)
		if err != nil {
			return err
		}
		parseLeaf(p, 0, fn)
	}
	return nil
}

// guessPageSize reads the page size from a meta page whose checksum holds
// (the one bbolt would use), else assumes the OS page size, with which
// evspool creates its spools. A meta page's page size is trusted only
// under its checksum: with a flipped bit in it the scan would step over
// pages, and salvage lose their events.
func guessPageSize(f io.ReaderAt) int {
	if m, ok := bestMeta(f); ok {
		return int(m.pageSize)
	}
	return int(costPage)
}

// parseLeaf parses p as a leaf page (header included) and recurses into
// inline buckets of the top level. Elements, keys and values outside p are
// skipped.
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
			// The spool's only inline bucket (meta) sits in the root leaf:
			// one level. Each level multiplies the work on a crafted page
			// (elements may all point at the same bytes).
			if root, inline, ok := bucketValue(val); ok && root == 0 {
				parseLeaf(inline, depth+1, fn)
			}
		}
	}
}
