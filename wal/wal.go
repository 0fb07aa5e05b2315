package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

const (
	fileName     = "spool.db"
	lockFileName = "lock"
)

// WAL is a bounded, ordered, crash-safe queue of events in one bbolt file.
// All methods are safe for concurrent use. It starts no goroutines.
type WAL struct {
	dir  string
	path string
	opts Options
	lock *dirLock

	// dbmu guards the db pointer, which compaction swaps: everything that
	// uses db holds it for reading, compaction for writing.
	dbmu sync.RWMutex
	db   *bolt.DB

	// wmu serialises write transactions and guards the state below.
	wmu      sync.Mutex
	meta     meta
	pending  uint64 // events in the spool
	payload  uint64 // their bytes
	firstSeq uint64 // oldest pending sequence, 0 when empty
	firstAt  int64  // its timestamp (unix ns)
	budget   int64  // cost the entries may take, see cost()
	stats    processStats
	salvage  *SalvageReport

	// cost mirrors the entries' cost for Block's waiters, which read it
	// without wmu.
	cost atomic.Int64

	group  group
	closed atomic.Bool
}

// Open opens the spool in dir, creating the directory (0700) and the file
// (0600) as needed. A spool held by another process fails with ErrLocked after
// Options.LockTimeout. A damaged file is moved aside and what can be read of
// it is salvaged into a fresh spool; Salvaged then tells what was done.
func Open(dir string, opts *Options) (*WAL, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir, o.LockTimeout)
	if err != nil {
		return nil, err
	}
	w := &WAL{dir: dir, path: filepath.Join(dir, fileName), opts: o, lock: lock}
	w.group.init()
	if err := w.open(); err != nil {
		lock.unlock()
		return nil, err
	}
	return w, nil
}

// prepareDir creates dir 0700 whatever the umask, and refuses a directory
// other users can write to.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("wal: create spool directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("wal: spool directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("wal: spool path %s is not a directory: give --spool a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("%w: %s has mode %v; run chmod 700 %s or pick a directory only this user can write",
			ErrUnsafeDir, dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// open opens (or salvages) the bbolt file and loads the state.
func (w *WAL) open() error {
	db, err := w.openBolt(w.path)
	if err == nil {
		err = w.load(db)
		if err != nil {
			db.Close()
		}
	}
	if err == nil {
		w.db = db
		return nil
	}
	if !isDamage(err) {
		return err
	}
	report, serr := w.salvageFile(err)
	if serr != nil {
		return serr
	}
	w.salvage = report
	return nil
}

// openBolt opens a bbolt file with the spool's settings, turning a panic of
// bbolt on a damaged file into a *CorruptionError.
func (w *WAL) openBolt(path string) (db *bolt.DB, err error) {
	err = guard(path, func() error {
		var oerr error
		db, oerr = bolt.Open(path, 0o600, &bolt.Options{Timeout: w.opts.LockTimeout, NoSync: w.opts.NoSync})
		return oerr
	})
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, classifyOpenErr(path, err)
	}
	db.AllocSize = allocSize(w.opts.MaxBytes)
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("wal: chmod spool file: %w", err)
	}
	return db, nil
}

// allocSize is bbolt's growth step. Its default (16 MiB) would let the file
// overshoot a small cap; 1 MiB (less for caps under 16 MiB) bounds the
// overshoot at the cost of a few more truncate+fsync calls while growing.
func allocSize(maxBytes int64) int {
	return int(min(1<<20, max(64<<10, maxBytes/16)))
}

// Close closes the spool. Appends waiting for space return ErrClosed. A second
// Close returns nil.
func (w *WAL) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	w.group.close()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.dbmu.Lock()
	defer w.dbmu.Unlock()
	err := w.db.Close()
	if uerr := w.lock.unlock(); err == nil {
		err = uerr
	}
	return err
}

// Dir returns the spool directory.
func (w *WAL) Dir() string { return w.dir }

// Path returns the path of the spool file.
func (w *WAL) Path() string { return w.path }

// Salvaged returns what Open did about a damaged spool file, or nil if the
// file was sound.
func (w *WAL) Salvaged() *SalvageReport { return w.salvage }
