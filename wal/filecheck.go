package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"

	"github.com/evspool/evspool/internal/boltfile"
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
		err = boltfile.CheckMetaPair(rec)
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

// checkLayout checks the meta and freelist pages through r, then the bucket
// trees through a mapping of f (boltfile.CheckTrees).
func checkLayout(f *os.File, r io.ReaderAt, size int64) error {
	m, free, err := boltfile.Layout(r, size)
	if err != nil {
		return err
	}
	return checkMappedTrees(f, r, m, free)
}

// checkMappedTrees is the tree check over a read-only mapping of f, which
// spares a pread(2) per leaf header, or over pread where it cannot be
// mapped. A fault while reading the mapping is a *faultError, not a crash.
func checkMappedTrees(f *os.File, pread io.ReaderAt, m boltfile.Meta, free []uint64) (err error) {
	r, unmap, err := mapFile(f, int64(m.PageCount)*int64(m.PageSize))
	if err != nil {
		return boltfile.CheckTrees(pread, m, free, eventsBucket, metaBucket)
	}
	defer unmap()
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			err = &faultError{p}
		}
	}()
	return boltfile.CheckTrees(r, m, free, eventsBucket, metaBucket)
}
