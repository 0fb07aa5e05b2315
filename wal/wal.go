package wal

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	fileName     = "spool.db"
	lockFileName = "lock"
)

// WAL is a bounded, ordered, crash-safe queue of events in one bbolt file.
// All methods are safe for concurrent use. It starts no goroutines.
type WAL struct {
	sd    *spoolDir // the directory, held open: every file of the spool is opened in it
	path  string
	opts  Options
	lock  *os.File // flock'd (lock.go)
	marks *marks   // guarded by wmu

	// dbmu guards the db pointer, which compaction swaps (write lock).
	dbmu sync.RWMutex
	db   *bolt.DB

	// wmu serialises write transactions and guards the state below.
	wmu sync.Mutex
	counts
	staleAtOpen bool  // the scan found values at or below the removal mark
	stats       Stats // the process counters (Appended to CommitWriteTime)
	salvage     *SalvageReport

	// acked: entries up to it are hidden even while the file holds them
	// (ackdefer.go). Written under wmu, read by Read without it.
	acked      atomic.Uint64
	debt       int64             // wmu: the cost of entries Ack hid that no commit has deleted yet
	scratch    state             // wmu: the working copy snapshot hands out
	out        handedOut         // what Read handed out, which DropOldest keeps (handedout.go)
	lastCommit time.Duration     // wmu: Clock.Boot() when a commit last deleted or appended
	later      map[string][]byte // wmu: values StoreLater keeps for the next commit (kv.go)

	// cost and budget (see entryCost) change under wmu but are atomics for
	// Block's waiters, which hold the group's lock and must not take wmu.
	cost          atomic.Int64
	budget        atomic.Int64
	compactedSize int64         // the file's size after the last compaction (wmu)
	closedSize    int64         // the file's size at Close, for Stats (wmu; -1 while open)
	stateRefused  atomic.Uint64 // keys the state did not keep since Open (written under wmu)
	sized         sizeReading   // fileSize's last reading (wmu)

	yield func() error // asked during the start-up scan whether to stop (Inspect)

	group  group
	closed atomic.Bool
	// broken is set when a compaction or repair could not reopen the
	// database: every method returns it until ready reopens the spool.
	broken   atomic.Pointer[error]
	nextHeal time.Duration // Clock.Boot() when ready may next try to reopen (wmu)
}

// Open opens the spool in dir, creating it (0700, files 0600) as needed. A
// spool held by another process fails with ErrLocked after
// Options.LockTimeout. A damaged file is moved aside and salvaged into a
// fresh one (see Salvaged).
func Open(dir string, opts *Options) (*WAL, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := mkdirDurable(dir, &o); err != nil {
		return nil, fmt.Errorf("wal: create spool directory: %w", err)
	}
	sd, err := openSpoolDir(dir, true)
	if err != nil {
		return nil, err
	}
	sd.fsync = o.fsyncDir
	w := &WAL{sd: sd, path: sd.join(fileName), opts: o, closedSize: -1}
	w.group.init(o.Clock)
	if w.lock, err = lockDir(sd, o.LockTimeout, o.Clock); err == nil {
		if w.marks, err = openMarks(sd, !o.NoSync); err == nil {
			if w.marks.damaged {
				o.Logger.Warn("the marks file fails its checksum: its numbers are not used, spool.db's are",
					"path", sd.join(marksFileName))
			}
			err = w.open()
		}
	}
	if err != nil {
		_ = w.closeFiles()
		return nil, err
	}
	return w, nil
}

// closeFiles closes the marks file, the lock and the directory, those open.
func (w *WAL) closeFiles() error {
	var merr, lerr error
	if w.marks != nil {
		merr = w.marks.close()
	}
	if w.lock != nil {
		lerr = w.lock.Close()
	}
	return cmp.Or(merr, lerr, w.sd.close())
}

// open opens (or salvages) the bbolt file and loads the state, after
// removing leftovers; a file it created is made durable in the directory.
func (w *WAL) open() error {
	if err := w.removeLeftovers(); err != nil {
		return err
	}
	created := !w.sd.exists(fileName)
	var db *bolt.DB
	err := w.openRetrying(func() (err error) {
		db, err = w.openLoaded()
		return err
	})
	switch {
	case err == nil:
		w.db = db
		if created {
			// bbolt created spool.db (and fsync'd it): make its name durable.
			if err := w.syncDir(); err != nil {
				db.Close()
				return err
			}
		}
	case !isDamage(err):
		return err
	default:
		report, err := w.salvageFile(err)
		if err != nil {
			return err
		}
		w.salvage = report
	}
	return w.settle()
}

// openLoaded opens spool.db and loads the state from it.
func (w *WAL) openLoaded() (*bolt.DB, error) {
	db, err := w.openBolt()
	if err == nil {
		if err = w.load(db); err != nil {
			db.Close()
		}
	}
	return db, err
}

// settle runs at Open. A reservation above nextSeq means the last process
// did not close the spool: free pages may hold records of a commit cut short,
// under numbers about to be reused, that salvage's page scan would take for
// real. A compaction copies only committed data; if it fails, numbering goes
// on above the reservation so that no number is handed out twice.
func (w *WAL) settle() error {
	if w.marks.reserved <= w.meta.nextSeq {
		return nil
	}
	if w.opts.NoSync || w.marks.exact {
		// spool.db may have lost commits the marks file kept (no fsync,
		// or an older file): sequence numbers must never go back.
		w.meta.nextSeq = w.marks.reserved
	}
	if err := w.compactLocked(); err != nil {
		if b := w.broken.Load(); b != nil {
			// The compaction lost the database (it could not reopen it).
			w.broken.Store(nil)
			return *b
		}
		w.stats.CompactErrs++
		w.meta.nextSeq = w.marks.reserved
		return nil
	}
	_ = w.marks.lower(w.meta.nextSeq)
	return nil
}

// openBolt opens spool.db after checkFile; damage, including a panic of
// bbolt.Open, is a *CorruptionError.
func (w *WAL) openBolt() (db *bolt.DB, err error) {
	path := w.path
	if err := checkFile(w.sd, fileName, w.opts.faults, w.marks.exact); err != nil {
		return nil, err
	}
	// If bbolt.Open panics, close the file it opened ourselves.
	var file *os.File
	openFile := func(_ string, flag int, _ os.FileMode) (*os.File, error) {
		f, err := w.sd.open(fileName, flag)
		file = f
		return f, err
	}
	err = guard(path, func() error {
		var oerr error
		db, oerr = bolt.Open(path, 0o600, &bolt.Options{
			Timeout:  w.opts.LockTimeout,
			NoSync:   w.opts.NoSync,
			OpenFile: openFile,
			// An array freelist (bbolt's default): a commit of a few events
			// takes the lowest free page without the map's churn, and
			// reuses pages already written rather than any free one
			// (BenchmarkOneByOne). It stays synced (no NoFreelistSync):
			// else bbolt rebuilds it at Open in a goroutine whose panic on
			// damage no recover can reach.
			FreelistType: bolt.FreelistArrayType,
			// Read ahead (Linux): bbolt's MADV_RANDOM would make Open's
			// verifying scan fault in one page at a time.
			MmapFlags: mmapFlags,
		})
		return oerr
	})
	if err != nil {
		if db != nil {
			db.Close()
		} else if file != nil && isDamage(err) {
			file.Close()
		}
		return nil, classifyOpenErr(path, err)
	}
	db.AllocSize = allocSize(w.opts.MaxBytes)
	if err := file.Chmod(0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("wal: chmod spool file: %w", err)
	}
	return db, nil
}

// allocSize is bbolt's growth step, small enough (at most 1 MiB) that the
// file does not overshoot a small cap.
func allocSize(maxBytes int64) int {
	return int(min(1<<20, max(64<<10, maxBytes/16)))
}

// Close closes the spool, a broken one too; Appends waiting for space return
// ErrClosed. A second Close returns nil.
func (w *WAL) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	w.group.close()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.broken.Load() == nil {
		// Best effort: the marks file says the same if this fails.
		_ = w.flushAcksLocked()
	}
	w.dbmu.Lock()
	defer w.dbmu.Unlock()
	err := w.db.Close() // a no-op if a failed compaction or repair closed it
	if err == nil && w.broken.Load() == nil {
		// A clean stop: the next Open need not settle.
		err = w.marks.lower(w.meta.nextSeq)
	}
	w.closedSize = w.sd.size(fileName)
	return cmp.Or(err, w.closeFiles())
}

// locked runs fn holding wmu, once the spool is ready (see ready).
func (w *WAL) locked(fn func() error) error {
	if err := w.ready(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.Usable(); err != nil {
		return err
	}
	return fn()
}

// Usable returns nil while the spool can be used, ErrClosed after Close, or
// the error that left it without its file: a readiness check.
func (w *WAL) Usable() error {
	if w.closed.Load() {
		return ErrClosed
	}
	if err := w.broken.Load(); err != nil {
		return *err
	}
	return nil
}

// ready is Usable for the methods' entry points: a broken spool is reopened
// at most once per healInterval, so it heals once the cause is gone.
func (w *WAL) ready() error {
	err := w.Usable()
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.Usable(); err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	now := w.opts.Clock.Boot()
	if now < w.nextHeal {
		return *w.broken.Load()
	}
	w.nextHeal = now + healInterval
	if err := w.reopen(); err != nil {
		return *w.broken.Load()
	}
	w.stats.Heals++
	return nil
}

// reopen closes and opens (or salvages) the database while the spool is
// broken: readers stop at Usable, and open sets w.db before broken is
// cleared. It needs wmu.
func (w *WAL) reopen() error {
	w.dbmu.Lock()
	_ = w.db.Close() // a no-op when already closed
	w.dbmu.Unlock()
	if err := w.open(); err != nil {
		w.fail(err)
		return err
	}
	w.broken.Store(nil)
	w.group.freed()
	return nil
}

// healInterval is how often ready tries to reopen a spool left unusable.
const healInterval = time.Second

// fail records that the spool lost its database. The caller holds wmu.
func (w *WAL) fail(err error) {
	err = fmt.Errorf("wal: spool %s unusable until it can be reopened (tried again every %v, or close and reopen it): %w",
		w.path, healInterval, err)
	w.broken.Store(&err)
	w.nextHeal = w.opts.Clock.Boot() + healInterval
}

// Dir returns the spool directory.
func (w *WAL) Dir() string { return w.sd.path }

// Salvaged returns what Open did about a damaged file; nil if it was sound.
func (w *WAL) Salvaged() *SalvageReport { return w.salvage }
