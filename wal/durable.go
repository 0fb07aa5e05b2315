package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Names beside spool.db that Open and salvage manage.
const (
	compactSuffix = ".compact" // a compaction in progress
	salvageSuffix = ".salvage" // a salvage in progress
	corruptInfix  = ".corrupt-"
	// maxCorruptCopies bounds the damaged copies kept (pruneCopies).
	maxCorruptCopies = 2
)

// syncFile makes the directory d's entries durable (Options.fsyncDir's
// default).
func syncFile(_ string, d *os.File) error { return d.Sync() }

// syncDir makes the spool directory's entries durable (unless NoSync).
func (w *WAL) syncDir() error {
	if w.opts.NoSync {
		return nil
	}
	if err := w.sd.sync(); err != nil {
		return fmt.Errorf("wal: sync spool directory %s: %w", w.sd.path, err)
	}
	return nil
}

// mkdirDurable creates dir and its missing parents (0700) and, unless
// o.NoSync, fsyncs the parent of each (with o.fsyncDir), so a power loss
// cannot take the directory away with the files later synced in it.
func mkdirDurable(dir string, o *Options) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if o.NoSync {
		return nil
	}
	// Deepest first: each parent sync makes its child's entry durable.
	for _, d := range created {
		if err := syncParent(filepath.Dir(d), o.fsyncDir); err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Dir(d), err)
		}
	}
	return nil
}

// syncParent fsyncs a directory above the spool with fsync.
func syncParent(path string, fsync func(path string, d *os.File) error) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return fsync(path, d)
}

// removeLeftovers removes what an interrupted compaction or salvage left
// (never renamed over spool.db, so nothing spool.db lacks) and the files of
// earlier evspools that nothing reads now (migrate.go).
func (w *WAL) removeLeftovers() error {
	removed := false
	for _, name := range append([]string{fileName + compactSuffix, fileName + salvageSuffix}, obsoleteFiles...) {
		err := w.sd.remove(name)
		switch {
		case err == nil:
			removed = true
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("wal: remove leftover: %w", err)
		}
	}
	if removed {
		return w.syncDir()
	}
	return nil
}

// keepCopy keeps the damaged spool file as name (a hard link, else a copy),
// or reuses one an interrupted salvage kept; the caller syncs the directory.
func (w *WAL) keepCopy(name string) (string, error) {
	fi, err := w.sd.stat(fileName)
	if err != nil {
		return "", err
	}
	for _, c := range w.corruptCopies() {
		if ci, err := w.sd.stat(c); err == nil && ci.Dev == fi.Dev && ci.Ino == fi.Ino {
			return w.sd.join(c), nil
		}
	}
	if err := w.sd.link(fileName, name); err == nil {
		return w.sd.join(name), nil
	}
	src, err := w.sd.open(fileName, os.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := w.sd.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(dst, src)
	if err == nil && !w.opts.NoSync {
		err = dst.Sync()
	}
	err = cmp.Or(err, dst.Close())
	if err != nil {
		_ = w.sd.remove(name)
		return "", err
	}
	return w.sd.join(name), nil
}

// corruptName names a new damaged copy after the wall clock (Options.Clock),
// with a number added should a copy of that name exist (a clock that stands
// still, or was stepped back).
func (w *WAL) corruptName() string {
	name := fileName + corruptInfix + w.opts.Clock.Now().UTC().Format("20060102T150405.000000000Z")
	free := name
	for i := 1; ; i++ {
		if _, err := w.sd.stat(free); err != nil {
			return free
		}
		free = fmt.Sprintf("%s.%d", name, i)
	}
}

// corruptCopies lists the damaged copies kept, oldest first (by name).
func (w *WAL) corruptCopies() []string {
	names, _ := w.sd.names()
	var out []string
	for _, m := range names {
		if strings.HasPrefix(m, fileName+corruptInfix) && !strings.HasSuffix(m, compactSuffix) && !strings.HasSuffix(m, salvageSuffix) {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// pruneCopies keeps the newest damaged copy, and older ones while there are
// at most maxCorruptCopies within MaxBytes in all. It returns those removed.
func (w *WAL) pruneCopies() []string {
	copies := w.corruptCopies()
	var removed []string
	var total int64
	for i := len(copies) - 1; i >= 0; i-- {
		size := w.sd.size(copies[i])
		newest := i == len(copies)-1
		if newest || (len(copies)-i <= maxCorruptCopies && total+size <= w.opts.MaxBytes) {
			total += size
			continue
		}
		if err := w.sd.remove(copies[i]); err == nil {
			removed = append(removed, w.sd.join(copies[i]))
		}
	}
	if len(removed) > 0 {
		_ = w.syncDir()
	}
	return removed
}
