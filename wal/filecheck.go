package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// checkFile looks at a spool file before bbolt maps it, for the damage bbolt
// cannot survive cleanly (it would fault, panic inside Open, or loop): an
// empty or truncated file, a bad freelist page, bucket trees that are not
// trees. It returns a *CorruptionError for damage, nil for a sound or absent
// file, and the OS's error otherwise. Bad records are left to scan.
func checkFile(d *spoolDir, name string, seam faultSeam, clean bool) error {
	path := d.join(name)
	if err := injected(seam, "pread"); err != nil {
		return fmt.Errorf("wal: spool file %s: %w", path, err)
	}
	f, err := d.open(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: open spool file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: stat spool file %s: %w", path, err)
	}
	rec := &readRecorder{r: f}
	err = checkLayout(f, rec, fi.Size())
	if err == nil && clean {
		err = checkMetaPair(rec)
	}
	switch {
	case rec.err != nil:
		// What looked wrong may be only what could not be read.
		return fmt.Errorf("wal: spool file %s: %w", path, &ioError{rec.err})
	case transient(err):
		return fmt.Errorf("wal: spool file %s: %w", path, err)
	case err != nil:
		return &CorruptionError{Path: path, Err: err}
	}
	return nil
}

// readRecorder keeps the first read error other than EOF: not damage.
type readRecorder struct {
	r   io.ReaderAt
	err error
}

func (rr *readRecorder) ReadAt(p []byte, off int64) (int, error) {
	n, err := rr.r.ReadAt(p, off)
	if err != nil && err != io.EOF && rr.err == nil {
		rr.err = err
	}
	return n, err
}

// checkLayout checks the meta and freelist pages and the bucket trees of f.
func checkLayout(f *os.File, r io.ReaderAt, size int64) error {
	if size == 0 {
		// bbolt would silently take it for a new file.
		return errors.New("the file is empty")
	}
	m, ok := bestMeta(r)
	if !ok {
		return errors.New("no valid bbolt meta page: not a spool file, or its header is destroyed")
	}
	ps := uint64(m.pageSize)
	if m.pgid > uint64(size)/ps {
		return fmt.Errorf("the file is %d bytes but its meta page says it holds %d pages of %d bytes: truncated", size, m.pgid, ps)
	}
	if m.root < 2 || m.root >= m.pgid {
		return fmt.Errorf("meta page puts the root at page %d of %d", m.root, m.pgid)
	}
	if m.freelist == noFreelist {
		// bbolt would rebuild it in a goroutine whose panic on damage no
		// recover reaches: salvage instead.
		return errors.New("meta page says the freelist was not written; the file is rebuilt rather than walked by bbolt")
	}
	if m.freelist < 2 || m.freelist >= m.pgid {
		return fmt.Errorf("meta page puts the freelist at page %d of %d", m.freelist, m.pgid)
	}
	free, err := checkFreelist(r, m)
	if err != nil {
		return fmt.Errorf("freelist page %d: %w", m.freelist, err)
	}
	return checkMappedTrees(f, r, m, free)
}

// checkMetaPair checks both meta pages of a file closed cleanly: no commit
// was under way, so an invalid one is damage, on which bbolt would silently
// fall back one transaction, losing the last commit.
func checkMetaPair(r io.ReaderAt) error {
	m, ok := readMeta(r, 0)
	if !ok {
		return errors.New("meta page 0 fails its checksum in a file closed cleanly")
	}
	if _, ok := readMeta(r, int64(m.pageSize)); !ok {
		return errors.New("meta page 1 fails its checksum in a file closed cleanly")
	}
	return nil
}

// checkFreelist checks the freelist page and its ids and returns the ids.
func checkFreelist(f io.ReaderAt, m boltMeta) ([]uint64, error) {
	ps := uint64(m.pageSize)
	b := make([]byte, pageHeaderSize+8)
	if _, err := f.ReadAt(b, int64(m.freelist*ps)); err != nil && err != io.EOF {
		return nil, err
	}
	h := decodeHeader(b)
	if h.flags != freelistPageFlag {
		return nil, fmt.Errorf("page type %#x is not a freelist", h.flags)
	}
	if h.id != m.freelist {
		// bbolt would free the page its header names at the next commit.
		return nil, fmt.Errorf("the freelist page says it is page %d", h.id)
	}
	first, count := freelistIDs(b)
	span := h.span(ps)
	if count > m.pgid || pageHeaderSize+(first+count)*8 > span || m.freelist+span/ps > m.pgid {
		return nil, fmt.Errorf("%d ids do not fit in the page", count)
	}
	raw := make([]byte, count*8)
	if _, err := f.ReadAt(raw, int64(m.freelist*ps+pageHeaderSize+first*8)); err != nil {
		return nil, err
	}
	// The freelist's own pages are in no tree: count them as free.
	ids := make([]uint64, count, count+span/ps)
	for id := m.freelist; id < m.freelist+span/ps; id++ {
		ids = append(ids, id)
	}
	for i := range count {
		if ids[i] = binary.LittleEndian.Uint64(raw[i*8:]); ids[i] < 2 || ids[i] >= m.pgid {
			return nil, fmt.Errorf("free page id %d outside the file's %d pages", ids[i], m.pgid)
		}
	}
	return ids, nil
}
