package boltfile

import "io"

// pageReader reads a file's pages of ps bytes through r.
type pageReader struct {
	r   io.ReaderAt
	ps  int64
	hdr [PageHeaderSize]byte
}

func (pr *pageReader) header(id uint64) (pageHeader, error) {
	if _, err := pr.r.ReadAt(pr.hdr[:], int64(id)*pr.ps); err != nil {
		return pageHeader{}, err
	}
	return decodeHeader(pr.hdr[:]), nil
}

// read reads n bytes from page id's first on.
func (pr *pageReader) read(id, n uint64) ([]byte, error) {
	p := make([]byte, n)
	if _, err := pr.r.ReadAt(p, int64(id)*pr.ps); err != nil {
		return nil, err
	}
	return p, nil
}

// whole reads page id with its overflow, within size and maxOverflowScan.
func (pr *pageReader) whole(id uint64, h pageHeader, size int64) ([]byte, error) {
	off := int64(id) * pr.ps
	n := min(int64(h.span(uint64(pr.ps))), size-off, maxOverflowScan)
	if off < 0 || n < PageHeaderSize {
		return nil, io.ErrUnexpectedEOF // past size: not a page of the file
	}
	p := make([]byte, n)
	if _, err := pr.r.ReadAt(p, off); err != nil && err != io.EOF {
		return nil, err
	}
	return p, nil
}
