package boltfile

import (
	"fmt"
	"io"
)

// Scan calls fn for every key/value pair in the leaf pages of the size
// bytes of r, and in the inline buckets of those leaves, whatever tree they
// belong to or none: what salvage reads of a damaged file. Pages are of the
// size the meta page in force gives, else pageSize. Pairs may repeat (old
// copies of pages); an element that overruns its page is skipped. Only a
// read error of r stops it.
func Scan(r io.ReaderAt, size, pageSize int64, fn func(key, val []byte)) error {
	pr := &pageReader{r: r, ps: pageSize}
	if m, ok := BestMeta(r); ok {
		pr.ps = int64(m.PageSize)
	}
	if pr.ps < PageHeaderSize {
		return fmt.Errorf("boltfile: page size %d", pr.ps)
	}
	for id := uint64(0); int64(id)*pr.ps+PageHeaderSize <= size; id++ {
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

// InForceRoot calls fn, as Scan does, for the pairs of the root bucket's
// page in force in the size bytes of r: the elements of its inline buckets.
// It returns false if no meta page is valid or the page cannot be read.
func InForceRoot(r io.ReaderAt, size int64, fn func(key, val []byte)) bool {
	m, found := BestMeta(r)
	if !found {
		return false
	}
	pr := &pageReader{r: r, ps: int64(m.PageSize)}
	h, err := pr.header(m.Root)
	if err != nil {
		return false
	}
	page, err := pr.whole(m.Root, h, size)
	if err != nil {
		return false
	}
	parseLeaf(page, 0, fn)
	return true
}
