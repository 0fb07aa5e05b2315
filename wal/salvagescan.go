package wal

import (
	"io"
	"os"
)

// Salvage reads a damaged file without bbolt, through pages.go, which
// trusts nothing it reads; it keeps only what passes its checksum.
//
// It needs the file's meta values: the removal mark (so acknowledged events
// do not come back), the next number, the counters. It takes them from the
// copy in force, the meta bucket under the root of bbolt's newest valid meta
// page, when every value in it passes its check. Only when that copy is
// damaged or unreadable does it fall back on the older copies left in the
// file's free pages, and then only on values that pass their check: each
// was written by a commit, and every value only grows, so the largest of
// them is at most what the lost copy said (it never removes a pending
// event, never skips a number the marks file and the records do not also
// skip). The records themselves (each carries its key and checksum) and the
// marks file then raise the next number and the removal mark.

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

// metaCopies keeps, per meta value, the largest copy that passes its check.
type metaCopies struct{ verified meta }

func (c *metaCopies) add(key, v []byte) {
	for _, f := range c.verified.fields() {
		if string(f.key) != string(key) {
			continue
		}
		if n, err := metaUint(key, v); err == nil {
			*f.val = max(*f.val, n)
		}
	}
}

// inForceMeta reads the meta bucket in force in the file f. ok is false if
// it cannot be found, or any value in it fails its check, or one that every
// file holds is not there.
func inForceMeta(f *os.File) (m meta, ok bool) {
	bm, found := bestMeta(f)
	if !found {
		return m, false
	}
	fi, err := f.Stat()
	if err != nil {
		return m, false
	}
	pr := &pageReader{r: f, ps: int64(bm.pageSize)}
	h, err := pr.header(bm.root)
	if err != nil {
		return m, false
	}
	page, err := pr.whole(bm.root, h, fi.Size())
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
