package boltfile

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
)

const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	metaChecksumAt = 56
	noFreelist     = ^uint64(0) // the freelist page id when it is not written
)

// Meta is what a meta page says of the file.
type Meta struct {
	PageSize  uint32
	Root      uint64 // the root bucket's page
	Freelist  uint64 // the freelist's page; ^0 if it was not written
	PageCount uint64 // the high-water mark: pages in use, meta pages included
	TxID      uint64
}

// BestMeta returns the valid meta page with the highest txid, the one bbolt
// uses, probing page 1 at each possible page size as bbolt does.
func BestMeta(r io.ReaderAt) (Meta, bool) {
	var best Meta
	found := false
	for _, off := range []int64{0, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10} {
		m, ok := ReadMeta(r, off)
		if ok && (off == 0 || int64(m.PageSize) == off) && (!found || m.TxID > best.TxID) {
			best, found = m, true
		}
	}
	return best, found
}

// ReadMeta reads the meta page at off; ok if its magic, version, checksum
// and page size hold.
func ReadMeta(r io.ReaderAt, off int64) (Meta, bool) {
	buf := make([]byte, PageHeaderSize+metaChecksumAt+8)
	if _, err := r.ReadAt(buf, off); err != nil {
		return Meta{}, false
	}
	b := buf[PageHeaderSize:]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(b[:metaChecksumAt])
	ps := le.Uint32(b[8:12])
	if le.Uint32(b[0:4]) != boltMagic || le.Uint32(b[4:8]) != boltVersion ||
		le.Uint64(b[metaChecksumAt:]) != h.Sum64() || ps < 512 || ps > 1<<16 || ps&(ps-1) != 0 {
		return Meta{}, false
	}
	return Meta{PageSize: ps, Root: le.Uint64(b[16:24]), Freelist: le.Uint64(b[32:40]),
		PageCount: le.Uint64(b[40:48]), TxID: le.Uint64(b[48:56])}, true
}

// CheckMetaPair checks both meta pages of a file closed cleanly: no commit
// was under way, so an invalid one is damage, on which bbolt would silently
// fall back one transaction, losing the last commit.
func CheckMetaPair(r io.ReaderAt) error {
	m, ok := ReadMeta(r, 0)
	if !ok {
		return errors.New("meta page 0 fails its checksum in a file closed cleanly")
	}
	if _, ok := ReadMeta(r, int64(m.PageSize)); !ok {
		return errors.New("meta page 1 fails its checksum in a file closed cleanly")
	}
	return nil
}
