package wal

import (
	"bytes"
	"io"
	"os"
	"syscall"
)

// mmapFlags makes bbolt read the whole file in when it maps it.
const mmapFlags = syscall.MAP_POPULATE

// mapFile maps the first size bytes of f read-only, so the tree check reads
// leaf headers without a pread(2) each. unmap releases the mapping.
func mapFile(f *os.File, size int64) (r io.ReaderAt, unmap func(), err error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return bytes.NewReader(b), func() { _ = syscall.Munmap(b) }, nil
}

// mapShared maps the first size bytes of f read-write and shared: stores
// reach the page cache, as pwrite(2)'s bytes do. unmap releases it.
func mapShared(f *os.File, size int) (b []byte, unmap func(), err error) {
	b, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
