package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/internal/clock"
)

// Inspect reads the spool in dir without changing it: its Stats (the
// process counters are zero) and the oldest dump pending entries. It fails
// with ErrLocked when a process holds the spool or opens it meanwhile. It
// tells damage from an I/O error as Open does, but never salvages.
func Inspect(dir string, dump int) (Stats, []Entry, error) {
	sd, err := openSpoolDir(dir, false)
	if err != nil {
		return Stats{}, nil, fmt.Errorf("wal: no spool at %s: %w", dir, err)
	}
	defer sd.close()
	if _, err := sd.stat(fileName); err != nil {
		return Stats{}, nil, fmt.Errorf("wal: no spool at %s: %w", dir, err)
	}
	probe := &writerProbe{d: sd}
	if err := probe.notHeld(dir); err != nil {
		return Stats{}, nil, err
	}
	reader := func() *WAL {
		return &WAL{dir: dir, sd: sd, path: sd.join(fileName), closedSize: -1, yield: probe.yield, opts: Options{MaxBytes: DefaultMaxBytes, Now: time.Now,
			Clock: clock.System(), Logger: slog.New(slog.DiscardHandler)}}
	}
	var w *WAL
	var entries []Entry
	err = reader().openRetrying(func() error {
		if err := probe.notHeld(dir); err != nil {
			return err // a process took the spool while Inspect waited to try again
		}
		r := reader() // each try counts from scratch
		es, err := r.inspectFile(dump)
		if err == nil {
			w, entries = r, es
		}
		return err
	})
	if err != nil {
		return Stats{}, nil, err
	}
	st := w.Stats()
	st.MaxBytes = 0 // the cap is the running process's setting, not the file's
	return st, entries, nil
}

// inspectFile is one try of Inspect at the file.
func (w *WAL) inspectFile(dump int) ([]Entry, error) {
	var entries []Entry
	if err := checkFile(w.sd, fileName, nil, readMarksFile(w.sd).exact); err != nil {
		return nil, err
	}
	err := guard(w.path, func() error {
		// bbolt holds a shared flock while open: the scan yields to a writer.
		db, err := bolt.Open(w.path, 0o600, &bolt.Options{ReadOnly: true, Timeout: DefaultLockTimeout,
			OpenFile: func(_ string, flag int, _ os.FileMode) (*os.File, error) { return w.sd.open(fileName, flag) }})
		if err != nil {
			return classifyOpenErr(w.path, err)
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(eventsBucket) == nil || tx.Bucket(metaBucket) == nil {
				return &CorruptionError{Path: w.path, Err: errors.New("events or meta bucket missing")}
			}
			if err := w.scan(tx); err != nil {
				return err
			}
			// Acked entries a dead process left (marks file) are not pending.
			removed := readMarksFile(w.sd).removed
			st := w.snapshot()
			if _, err := st.remove(tx.Bucket(eventsBucket), removed, 0); err != nil {
				return err
			}
			w.restore(st)
			if dump > 0 {
				entries, err = w.readTx(tx, removed+1, dump, 0)
			}
			return err
		})
	})
	return entries, err
}

// notHeld returns ErrLocked if a process holds the spool in dir.
func (p *writerProbe) notHeld(dir string) error {
	held, err := p.held()
	if err == nil && held {
		err = fmt.Errorf("%w: the spool at %s is open in a running process", ErrLocked, dir)
	}
	return err
}

// readMarksFile reads the marks file read-only: zeros if missing or damaged.
func readMarksFile(d *spoolDir) marks {
	var m marks
	if buf, err := d.readFile(marksFileName); err == nil {
		m.parse(buf)
	}
	return m
}
