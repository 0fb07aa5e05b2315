package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ErrGaveWay is returned by Inspect when a process opened the spool while
// Inspect read it. It matches ErrLocked.
var ErrGaveWay = fmt.Errorf("%w: a process opened the spool while Inspect read it, and Inspect gave way", ErrLocked)

// Inspect reads the spool in dir without changing it: its Stats (the
// process counters are zero) and the oldest dump pending entries. It fails
// with ErrLocked when a process holds the spool or opens it meanwhile. It
// tells damage from an I/O error as Open does, but never salvages.
func Inspect(dir string, dump int) (Stats, []Entry, error) {
	st, entries, _, err := InspectValues(dir, dump)
	return st, entries, err
}

// InspectValues is Inspect, with the values SetValues stored under keys
// (nil for a key with none).
func InspectValues(dir string, dump int, keys ...string) (Stats, []Entry, map[string][]byte, error) {
	sd, err := openSpoolDir(dir, false)
	if err == nil {
		defer sd.close()
		_, err = sd.stat(fileName)
	}
	if err != nil {
		return Stats{}, nil, nil, fmt.Errorf("wal: no spool at %s: %w", dir, err)
	}
	if err := heldErr(sd, ErrLocked); err != nil {
		return Stats{}, nil, nil, err
	}
	opts, _ := (*Options)(nil).withDefaults()
	reader := func() *WAL {
		return &WAL{sd: sd, path: sd.join(fileName), closedSize: -1, opts: opts,
			yield: func() error { return heldErr(sd, ErrGaveWay) }}
	}
	var w *WAL
	var entries []Entry
	var values map[string][]byte
	err = reader().openRetrying(func() error {
		if err := heldErr(sd, ErrLocked); err != nil {
			return err // a process took the spool while Inspect waited to try again
		}
		r := reader() // each try counts from scratch
		es, vs, err := r.inspectFile(dump, keys)
		if err == nil {
			w, entries, values = r, es, vs
		}
		return err
	})
	if err != nil {
		return Stats{}, nil, nil, err
	}
	st := w.Stats()
	st.MaxBytes = 0 // the cap is the running process's setting, not the file's
	return st, entries, values, nil
}

// inspectFile is one try of Inspect at the file.
func (w *WAL) inspectFile(dump int, keys []string) ([]Entry, map[string][]byte, error) {
	var entries []Entry
	values := make(map[string][]byte, len(keys))
	var marks marks
	if buf, err := w.sd.readFile(marksFileName); err == nil {
		marks.parse(buf)
	}
	if err := checkFile(w.sd, fileName, nil, marks.exact); err != nil {
		return nil, nil, err
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
			st := w.snapshot()
			if _, err := st.remove(tx.Bucket(eventsBucket), marks.removed, 0); err != nil {
				return err
			}
			w.restore(st)
			for _, k := range keys {
				if raw := tx.Bucket(metaBucket).Get([]byte(k)); raw != nil {
					p, err := decodeMeta([]byte(k), raw)
					if err != nil {
						return err
					}
					values[k] = bytes.Clone(p)
				}
			}
			if dump > 0 {
				entries, err = w.readTx(tx, marks.removed+1, dump, 0)
			}
			return err
		})
	})
	return entries, values, err
}

// heldErr returns err, naming the spool, if a process holds its lock: it
// takes a shared flock on the lock file and releases it at once.
func heldErr(d *spoolDir, err error) error {
	f, oerr := d.open(lockFileName, os.O_RDONLY)
	if errors.Is(oerr, os.ErrNotExist) {
		return nil // no process ever opened this spool for writing
	}
	if oerr != nil {
		return fmt.Errorf("wal: open lock file: %w", oerr)
	}
	defer f.Close() // releases the probe's lock
	switch lerr := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case errors.Is(lerr, unix.EWOULDBLOCK):
		return fmt.Errorf("%w (%s)", err, d.path)
	case lerr != nil:
		return fmt.Errorf("wal: lock %s: %w", d.join(lockFileName), lerr)
	}
	return nil
}
