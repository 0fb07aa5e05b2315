package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Layout checks the meta and freelist pages of the size bytes of r for
// what bbolt cannot survive cleanly (it would fault, or panic inside its
// Open): an empty or truncated file, no valid meta page, a root or freelist
// outside the file, a freelist that is not one. It returns the meta page in
// force and the free page ids, the freelist's own pages among them, for
// CheckTrees.
func Layout(r io.ReaderAt, size int64) (Meta, []uint64, error) {
	if size == 0 {
		// bbolt would silently take it for a new file.
		return Meta{}, nil, errors.New("the file is empty")
	}
	m, ok := BestMeta(r)
	if !ok {
		return Meta{}, nil, errors.New("no valid bbolt meta page: not a bbolt file, or its header is destroyed")
	}
	ps := uint64(m.PageSize)
	if m.PageCount > uint64(size)/ps {
		return m, nil, fmt.Errorf("the file is %d bytes but its meta page says it holds %d pages of %d bytes: truncated", size, m.PageCount, ps)
	}
	if m.Root < 2 || m.Root >= m.PageCount {
		return m, nil, fmt.Errorf("meta page puts the root at page %d of %d", m.Root, m.PageCount)
	}
	if m.Freelist == noFreelist {
		// bbolt would rebuild it in a goroutine whose panic on damage no
		// recover reaches: salvage instead.
		return m, nil, errors.New("meta page says the freelist was not written; the file is rebuilt rather than walked by bbolt")
	}
	if m.Freelist < 2 || m.Freelist >= m.PageCount {
		return m, nil, fmt.Errorf("meta page puts the freelist at page %d of %d", m.Freelist, m.PageCount)
	}
	free, err := checkFreelist(r, m)
	if err != nil {
		return m, nil, fmt.Errorf("freelist page %d: %w", m.Freelist, err)
	}
	return m, free, nil
}

// checkFreelist checks the freelist page and its ids and returns the ids.
func checkFreelist(r io.ReaderAt, m Meta) ([]uint64, error) {
	ps := uint64(m.PageSize)
	b := make([]byte, PageHeaderSize+8)
	if _, err := r.ReadAt(b, int64(m.Freelist*ps)); err != nil && err != io.EOF {
		return nil, err
	}
	h := decodeHeader(b)
	if h.flags != freelistPageFlag {
		return nil, fmt.Errorf("page type %#x is not a freelist", h.flags)
	}
	if h.id != m.Freelist {
		// bbolt would free the page its header names at the next commit.
		return nil, fmt.Errorf("the freelist page says it is page %d", h.id)
	}
	first, count := freelistIDs(b)
	span := h.span(ps)
	if count > m.PageCount || PageHeaderSize+(first+count)*8 > span || m.Freelist+span/ps > m.PageCount {
		return nil, fmt.Errorf("%d ids do not fit in the page", count)
	}
	raw := make([]byte, count*8)
	if _, err := r.ReadAt(raw, int64(m.Freelist*ps+PageHeaderSize+first*8)); err != nil {
		return nil, err
	}
	// The freelist's own pages are in no tree: count them as free.
	ids := make([]uint64, count, count+span/ps)
	for id := m.Freelist; id < m.Freelist+span/ps; id++ {
		ids = append(ids, id)
	}
	for i := range count {
		if ids[i] = binary.LittleEndian.Uint64(raw[i*8:]); ids[i] < 2 || ids[i] >= m.PageCount {
			return nil, fmt.Errorf("free page id %d outside the file's %d pages", ids[i], m.PageCount)
		}
	}
	return ids, nil
}
