package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// load checks and counts an existing spool, then prepares it: creates a new
// spool's buckets, stores an earlier format anew, tidies the holes.
//
// Nothing is written before the check passes. bbolt falls back on the older
// meta page when the newer fails its checksum, and a commit on that tree
// takes pages its freelist calls free: the newer tree's pages, which may hold
// the only sound copy of records that a salvage of the damage would recover.
func (w *WAL) load(db *bolt.DB) error {
	found, err := w.scanIfFound(db)
	if err != nil {
		return err
	}
	stored, err := w.prepare(db)
	if err != nil {
		return err
	}
	if !found || stored {
		// Counted anew from what prepare wrote (a new file is empty).
		if err := w.scanDB(db); err != nil {
			return err
		}
	}
	if err := w.applyRemovedMark(db); err != nil {
		return err
	}
	// With fsync off the marks file may outlive spool.db's last commits:
	// never hand out a number it says was acknowledged.
	w.meta.nextSeq = max(w.meta.nextSeq, w.marks.removed+1)
	w.debt = 0
	w.acked.Store(w.meta.removedSeq)
	return nil
}

// scanIfFound scans the spool if the file has both buckets: found tells.
func (w *WAL) scanIfFound(db *bolt.DB) (found bool, err error) {
	err = guard(w.path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			found = tx.Bucket(eventsBucket) != nil && tx.Bucket(metaBucket) != nil
			return nil
		})
	})
	if err == nil && found {
		err = w.scanDB(db)
	}
	return found, err
}

// scanDB runs scan in a read transaction, a panic or fault in it caught.
func (w *WAL) scanDB(db *bolt.DB) error {
	return guard(w.path, func() error {
		if err := injected(w.opts.faults, "map"); err != nil {
			return &CorruptionError{Path: w.path, Err: err}
		}
		return db.View(func(tx *bolt.Tx) error { return w.scan(tx) })
	})
}

// prepare creates a new spool's buckets and meta values, or stores an
// earlier format's anew (stored tells which), or tidies the holes of a
// current one.
func (w *WAL) prepare(db *bolt.DB) (stored bool, err error) {
	err = guard(w.path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(eventsBucket); err != nil {
				return err
			}
			mb, err := tx.CreateBucketIfNotExists(metaBucket)
			if err != nil {
				return err
			}
			var m meta
			state, err := m.load(mb)
			switch {
			case err != nil:
				return &CorruptionError{Path: w.path, Err: err}
			case state == metaEmpty:
				// A new file: number on above what the marks file reserved.
				m.nextSeq = max(1, w.marks.reserved, w.marks.removed+1)
			case state == metaCurrent:
				return tidyHoles(mb, m.removedSeq, w.path)
			}
			// A new file, or an earlier format (migrate.go), stored anew.
			stored = true
			return m.store(mb)
		})
	})
	if err != nil && !isDamage(err) {
		err = fmt.Errorf("wal: prepare spool file %s: %w", w.path, err)
	}
	return stored, err
}

// applyRemovedMark deletes what the marks file (or the file's own removal
// mark) says was removed but the file still holds, so that acked events are
// not delivered again, nor hidden from Read while Len counts them.
func (w *WAL) applyRemovedMark(db *bolt.DB) error {
	upTo := max(w.meta.removedSeq, w.marks.removed)
	if !w.staleAtOpen && (w.firstSeq == 0 || w.firstSeq > upTo) {
		return nil
	}
	st := w.snapshot()
	if _, err := w.commitRemoval(db, st, upTo, nil); err != nil {
		if isDamage(err) {
			return err
		}
		return fmt.Errorf("wal: apply the removed-through mark to %s: %w", w.path, err)
	}
	w.restore(st)
	return nil
}

// scan reads the whole spool once, verifying every record's checksum so
// that damage is found at Open, and recomputes the counts.
func (w *WAL) scan(tx *bolt.Tx) error {
	var m meta
	if _, err := m.load(tx.Bucket(metaBucket)); err != nil {
		return &CorruptionError{Path: w.path, Err: err}
	}
	var pending, payload, first uint64
	var firstAt, cost int64
	eb := tx.Bucket(eventsBucket)
	if eb == nil {
		return &CorruptionError{Path: w.path, Err: errors.New("events bucket missing")}
	}
	w.staleAtOpen = false
	var seen, look uint64 // events read; when to look next
	for val, err := range walk(eb, w.path, 0) {
		if err != nil {
			return err
		}
		if seen >= look {
			look = seen + scanCheckEvery
			if err := w.scanCancelled(); err != nil {
				return err
			}
		}
		seen += uint64(val.n)
		m.nextSeq = max(m.nextSeq, val.last()+1)
		if val.last() <= m.removedSeq {
			w.staleAtOpen = true // removed, still in the file
			continue
		}
		// Of a frame, the events up to the removal mark are gone.
		events, bytes := val.span(m.removedSeq+1, val.last())
		if first == 0 {
			first, firstAt = max(val.first, m.removedSeq+1), val.at.wall
		}
		pending += events
		payload += bytes
		cost += val.cost()
	}
	// Nothing at or below the removal mark is ever handed out again.
	m.nextSeq = max(m.nextSeq, m.removedSeq+1)
	keys, size := countState(tx.Bucket(metaBucket))
	w.counts = counts{m, pending, payload, first, firstAt, keys, size}
	w.acked.Store(m.removedSeq)
	w.budget.Store(initialBudget(w.opts.MaxBytes))
	w.cost.Store(cost)
	return nil
}

// initialBudget is the cost the entries may take under a cap of maxBytes;
// the rest is for bbolt's own pages, pages not yet reusable, and growth.
func initialBudget(maxBytes int64) int64 {
	return maxBytes - maxBytes/8 - 2*int64(allocSize(maxBytes))
}

// guard runs fn, turning a panic or a memory fault in it (bbolt reads
// through mmap) into a *CorruptionError.
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			cause := fmt.Errorf("bbolt panicked: %v", r)
			if _, ok := r.(interface{ Addr() uintptr }); ok {
				// Not yet damage: an I/O error faults too (see transient.go).
				cause = &faultError{r}
			}
			err = &CorruptionError{Path: path, Err: cause}
		}
	}()
	err = fn()
	if errors.Is(err, berrors.ErrIncompatibleValue) && !errors.Is(err, ErrCorrupt) {
		// A value where a bucket should be (or the reverse): a flipped flag.
		err = &CorruptionError{Path: path, Err: err}
	}
	return err
}

// isDamage tells whether err means the file is damaged, to be salvaged.
func isDamage(err error) bool {
	return errors.Is(err, ErrCorrupt)
}

// classifyOpenErr sorts bbolt.Open's errors: OS errors and a lock timeout are
// reported as they are; anything else about the file's contents is damage.
func classifyOpenErr(path string, err error) error {
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: bbolt's lock on %s timed out", ErrLocked, path)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return fmt.Errorf("wal: open spool file %s: %w", path, err)
	}
	return &CorruptionError{Path: path, Err: err}
}

// scanCheckEvery is how many events the start-up scan reads between checks.
const scanCheckEvery = 1024

// scanCancelled returns an error when Options.Context has ended. It is not
// a *CorruptionError: a cancelled Open salvages nothing.
func (w *WAL) scanCancelled() error {
	if w.yield != nil {
		if err := w.yield(); err != nil {
			return err
		}
	}
	if err := w.opts.Context.Err(); err != nil {
		return fmt.Errorf("wal: open %s cancelled during the start-up scan: %w", w.path, err)
	}
	return nil
}
