package wal

import "time"

// Counter counts dropped events and their bytes.
type Counter struct {
	Events uint64
	Bytes  uint64
}

// Loss is what the spool lost in one commit or salvage (Options.OnLoss).
type Loss struct {
	Dropped Counter        // dropped to make room under DropOldest
	Salvage *SalvageReport // a salvage: its Missing events were lost (Stats.Unreadable)
}

// Stats is a snapshot of a spool's state. Pending figures, sequence numbers
// and loss counts survive restarts; the rest count this process since Open.
type Stats struct {
	PendingEvents uint64    // events in the spool
	PendingBytes  uint64    // their event bytes
	FileBytes     int64     // size of the spool file
	MaxBytes      int64     // the cap on FileBytes
	Fsync         bool      // each commit is fsync'd (Options.NoSync unset)
	FirstSeq      uint64    // oldest pending sequence number, 0 when empty
	LastSeq       uint64    // newest sequence number ever appended, 0 if none
	OldestTime    time.Time // when the oldest pending event was appended; zero when empty

	DroppedOldest Counter // removed to make room under DropOldest
	DroppedNewest Counter // refused under DropNewest
	Expired       Counter // removed by Expire (too old to be worth sending)
	Unreadable    uint64  // pending when the file was damaged, not recovered by its salvage

	StateKeys    uint64 // keys the state holds (AppendState)
	StateRefused uint64 // keys the state did not keep since Open: past MaxStateKeys, or too long

	Appended     uint64 // events appended since Open
	Acked        uint64 // events acknowledged since Open
	AckCommits   uint64 // commits made only to delete acknowledged events (see FlushAcks)
	Commits      uint64 // append transactions since Open (a group commit counts once)
	CommitErrors uint64 // append transactions that failed
	Compactions  uint64 // times the file was rewritten to give space back
	CompactErrs  uint64 // compactions that failed
	Heals        uint64 // times a spool left unusable was reopened by itself

	// CommitTime is how long the append transactions since Open took, fsync
	// included; CommitWriteTime the part bbolt spent writing and fsyncing
	// pages (TxStats.WriteTime).
	CommitTime      time.Duration
	CommitWriteTime time.Duration
}

// Stats returns a snapshot of the spool's counters.
func (w *WAL) Stats() Stats {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	s := w.stats // the process's counters
	s.PendingEvents, s.PendingBytes, s.FirstSeq, s.LastSeq = w.pending, w.payload, w.firstSeq, w.meta.nextSeq-1
	s.FileBytes, s.MaxBytes, s.Fsync = w.fileSize(), w.opts.MaxBytes, !w.opts.NoSync
	s.DroppedOldest, s.DroppedNewest, s.Expired = w.meta.droppedOldest, w.meta.droppedNewest, w.meta.expired
	s.Unreadable = w.meta.unreadable
	s.StateKeys, s.StateRefused = w.stateKeys, w.stateRefused.Load()
	if w.firstSeq != 0 {
		s.OldestTime = time.Unix(0, w.firstAt)
	}
	return s
}

// StateRefused is Stats().StateRefused without Stats' lock: the keys the
// state did not keep since Open.
func (w *WAL) StateRefused() uint64 { return w.stateRefused.Load() }

// Len returns the number of pending events.
func (w *WAL) Len() uint64 { return w.counted(func(c *counts) uint64 { return c.pending }) }

// FirstSeq returns the oldest pending sequence number, 0 when empty.
func (w *WAL) FirstSeq() uint64 { return w.counted(func(c *counts) uint64 { return c.firstSeq }) }

// LastSeq returns the newest sequence number ever appended, 0 if none.
func (w *WAL) LastSeq() uint64 {
	return w.counted(func(c *counts) uint64 { return c.meta.nextSeq - 1 })
}

// counted reads a figure of the counts under wmu.
func (w *WAL) counted(f func(*counts) uint64) uint64 {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return f(&w.counts)
}
