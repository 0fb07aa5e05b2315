package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// A failed read (EIO, ESTALE) faults through bbolt's mapping like damage.
// guard recovers it as a *faultError, and the file is read again through
// pread(2): an I/O error is retried with backoff and returned, not salvaged.
// Only if pread reads every byte and bbolt still faults is the file damaged.

// faultError is a memory fault raised while bbolt read the mapping.
type faultError struct{ v any }

func (e *faultError) Error() string {
	return fmt.Sprintf("memory fault reading the mapped file (an I/O error, or the file shorter than bbolt thinks): %v", e.v)
}

// ioError is a read of the spool file that failed in the OS: not damage.
type ioError struct{ err error }

func (e *ioError) Error() string { return "read failed: " + e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// transient tells a failure to retry before deciding it is damage.
func transient(err error) bool {
	var fe *faultError
	var ie *ioError
	return errors.As(err, &fe) || errors.As(err, &ie)
}

// faultSeam injects read failures in tests (Options.faults): op "map" is a
// read through bbolt's mapping at Open, "pread" the spool's own reads.
type faultSeam interface{ fault(op string) error }

// injected returns the seam's failure for op, if any: "map" as a memory
// fault, "pread" as an *ioError.
func injected(s faultSeam, op string) error {
	var err error
	if s != nil {
		err = s.fault(op)
	}
	switch {
	case err == nil:
		return nil
	case op == "map":
		return &faultError{err}
	}
	return &ioError{err}
}

// preadFile reads the whole file through pread, to tell I/O error from damage.
func (w *WAL) preadFile() error {
	if err := injected(w.opts.faults, "pread"); err != nil {
		return err
	}
	f, err := w.sd.open(fileName, os.O_RDONLY)
	if err != nil {
		return &ioError{err}
	}
	defer f.Close()
	if _, err := io.CopyBuffer(io.Discard, f, make([]byte, 1<<20)); err != nil {
		return &ioError{err}
	}
	return nil
}

// openRetrying runs openOnce, retried on openSchedule while it fails in a
// way that may pass; the last failure is damage only if pread reads the file.
func (w *WAL) openRetrying(openOnce func() error) error {
	r := openSchedule.start(w.opts.Clock)
	for {
		err := openOnce()
		if err == nil || !transient(err) {
			return err
		}
		ioErr := w.preadFile()
		if !r.again() {
			if ioErr != nil {
				return fmt.Errorf("wal: reading spool file %s failed %d times over %v (%v; through pread: %w): not salvaged, the file may be sound; check the disk or the filesystem, then start again",
					w.path, r.tries, r.waited, err, ioErr)
			}
			return &CorruptionError{Path: w.path, Err: fmt.Errorf("every byte reads through pread, yet bbolt faults at every try: %w", err)}
		}
		w.opts.Logger.Warn("reading the spool file failed; retrying before deciding it is damaged",
			"path", w.path, "error", err, "pread_error", ioErr, "attempt", r.tries, "backoff", r.next)
		if err := r.wait(w.opts.Context); err != nil {
			return fmt.Errorf("wal: open %s: %w", w.path, err)
		}
	}
}

// reopenAfterFault is Repair for a memory fault. It needs wmu.
func (w *WAL) reopenAfterFault(cause error) (*SalvageReport, error) {
	if err := w.preadFile(); err != nil {
		w.opts.Logger.Warn("reading the spool file failed; not salvaged", "path", w.path, "error", err, "cause", cause)
		return nil, fmt.Errorf("wal: spool file %s could not be read (%w) after %v: not salvaged, try again", w.path, err, cause)
	}
	before := w.salvage
	w.fail(cause) // readers stop at Usable while the file is reopened
	if err := w.reopen(); err != nil {
		return nil, err
	}
	if w.salvage != before {
		return w.salvage, nil
	}
	w.opts.Logger.Warn("a read of the spool file faulted; it reads again and is sound: reopened, nothing salvaged",
		"path", w.path, "cause", cause)
	return nil, nil
}
