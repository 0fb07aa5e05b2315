package wal

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

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
	if w.opts.Context == nil {
		return nil
	}
	if err := w.opts.Context.Err(); err != nil {
		return fmt.Errorf("wal: open %s cancelled during the start-up scan: %w", w.path, err)
	}
	return nil
}

// writerProbe tells Inspect whether a process holds the spool's lock by
// taking a shared flock and releasing it at once.
type writerProbe struct{ d *spoolDir }

// held reports whether a process holds the lock now.
func (p *writerProbe) held() (bool, error) {
	f, err := p.d.open(lockFileName, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // no process ever opened this spool for writing
	}
	if err != nil {
		return false, fmt.Errorf("wal: open lock file: %w", err)
	}
	defer f.Close() // releases the probe's lock
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("wal: lock %s: %w", p.d.join(lockFileName), err)
	}
	return false, nil
}

// ErrGaveWay is returned by Inspect when a process opened the spool while
// Inspect read it. It matches ErrLocked.
var ErrGaveWay = fmt.Errorf("%w: a process opened the spool while Inspect read it, and Inspect gave way", ErrLocked)

// yield is WAL.yield for Inspect: ErrGaveWay once a writer holds the lock.
func (p *writerProbe) yield() error {
	held, err := p.held()
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("%w (%s)", ErrGaveWay, p.d.path)
	}
	return nil
}
