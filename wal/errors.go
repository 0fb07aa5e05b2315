package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("wal: spool is closed")

	// ErrFull is returned by Append when the spool is full under DropNewest
	// (the events are counted as dropped), or under Block when ctx ended.
	ErrFull = errors.New("wal: spool is full")

	// ErrTooLarge is returned by Append for an event, or the events of one
	// Append together, that could never fit in the spool, whatever was
	// dropped.
	ErrTooLarge = errors.New("wal: too large for the spool")

	// ErrLocked is returned by Open when another process holds the spool.
	ErrLocked = errors.New("wal: spool is in use by another process")

	// ErrUnsafeDir is returned by Open when the spool directory can be written
	// by other users, or the spool path is itself a symlink.
	ErrUnsafeDir = errors.New("wal: unsafe spool directory")

	// ErrDirOwner is returned by Open when the spool directory belongs to
	// another user than the process's effective one.
	ErrDirOwner = errors.New("wal: spool directory is owned by another user")

	// ErrUnsafeFile is returned when a name the spool uses in its directory
	// is not a regular file: it is never followed, read or written.
	ErrUnsafeFile = errors.New("wal: not a regular file in the spool directory")

	// ErrCorrupt is matched (errors.Is) by every *CorruptionError.
	ErrCorrupt = errors.New("wal: spool file is damaged")
)

// CorruptionError reports damage found in the spool file: a bad checksum,
// key or page, or a panic raised by bbolt while reading it.
type CorruptionError struct {
	Path string // the damaged file
	Seq  uint64 // sequence number of the damaged record, 0 when not known
	Err  error  // what was seen
}

func (e *CorruptionError) Error() string {
	if e.Seq != 0 {
		return fmt.Sprintf("wal: spool file %s is damaged at sequence %d: %v", e.Path, e.Seq, e.Err)
	}
	return fmt.Sprintf("wal: spool file %s is damaged: %v", e.Path, e.Err)
}

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// errTooLarge says why n events that are committed together could never
// fit, and what to do: a batch is refused whole, even where each of its
// events would fit alone.
func errTooLarge(n int, cost, budget int64) error {
	if n > 1 {
		return fmt.Errorf("%w: %d events committed together need %d bytes of spool (their share of its pages) and at most %d fit: emit them in smaller batches, or raise the spool's size cap",
			ErrTooLarge, n, cost, budget)
	}
	return fmt.Errorf("%w: the event needs %d bytes of spool (its share of its pages) and at most %d fit: raise the spool's size cap or send smaller events",
		ErrTooLarge, cost, budget)
}
