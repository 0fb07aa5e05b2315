package wal

import (
	"os"
)

// Salvage needs the meta values of a damaged file: the removal mark (so
// acknowledged events do not come back), the next number, the counters. It
// takes them from the copy in force, the meta bucket under the root of
// bbolt's newest valid meta page, when every value in it passes its check.
// Only when that copy is damaged or unreadable does it fall back on the
// older copies left in the file's free pages, and then only on values that
// pass their check: each was written by a commit, and every value only
// grows, so the largest of them is at most what the lost copy said (it
// never removes a pending event, never skips a number the marks file and
// the records do not also skip). A value failing its check is never used.
// The records themselves (each carries its key and checksum) and the marks
// file (checksummed) then raise the next number and the removal mark.

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

// inForceMeta reads the meta bucket in force in the file f, without bbolt.
// ok is false if it cannot be found or any value in it fails its check (a
// format 1 file's bare values are taken as they are: they have no
// checksum).
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
	if dup {
		return m, false
	}
	return m.fromPairs(pairs)
}

// fromPairs decodes a meta bucket's key/value pairs: ok is false unless
// every value passes its check, and those every file holds are there.
func (m meta) fromPairs(pairs map[string][]byte) (meta, bool) {
	if pairs[string(keyNextSeq)] == nil || pairs[string(keyRemovedSeq)] == nil {
		return m, false
	}
	state, err := m.decode(func(k []byte) []byte { return pairs[string(k)] }, nil)
	return m, err == nil && state != metaEmpty
}
