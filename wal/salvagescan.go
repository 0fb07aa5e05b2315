package wal

import "io"

// Salvage reads a damaged file without bbolt and keeps only what passes its
// checksum. Meta values come from the copy in force if it is whole, else per
// value from the largest checked copy in the file's pages (every value only
// grows); the records and the marks file then raise them.

// scanPages calls fn for every key/value pair in the leaf pages of the
// size bytes of f (pages of a checked meta page's size, else the OS's);
// pairs may repeat (old copies of pages).
func scanPages(f io.ReaderAt, size int64, fn func(key, val []byte)) error {
	pr := &pageReader{r: f, ps: costPage}
	if m, ok := bestMeta(f); ok {
		pr.ps = int64(m.pageSize)
	}
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

// inForceMeta reads the meta bucket in force in the size bytes of f; ok
// only if it is whole.
func inForceMeta(f io.ReaderAt, size int64) (m meta, ok bool) {
	bm, found := bestMeta(f)
	if !found {
		return m, false
	}
	pr := &pageReader{r: f, ps: int64(bm.pageSize)}
	h, err := pr.header(bm.root)
	if err != nil {
		return m, false
	}
	page, err := pr.whole(bm.root, h, size)
	if err != nil {
		return m, false
	}
	pairs := map[string][]byte{}
	dup := false
	parseLeaf(page, 0, func(k, v []byte) {
		if len(k) == keySize {
			return // an inline events bucket's entry
		}
		_, dup = pairs[string(k)]
		pairs[string(k)] = v
	})
	if dup || pairs[string(keyNextSeq)] == nil || pairs[string(keyRemovedSeq)] == nil {
		return m, false
	}
	state, err := m.decode(func(k []byte) []byte { return pairs[string(k)] }, nil)
	return m, err == nil && state != metaEmpty
}
