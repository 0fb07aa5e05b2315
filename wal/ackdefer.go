package wal

import (
	"fmt"
	"time"
)

// The deletion of acknowledged entries is deferred to a later commit: see
// Ack for when, and docs/spool.md, "Acknowledgements". Against a commit of
// its own each Ack, deferring saves 25% of the CPU an event at 100 events/s
// and 31% at 1,000/s (node-cost, evspool-fsync / evspool-fsync-nodefer, 9
// rounds pooled: bench/README.md, node-cost-55m1-3).

// rideMin is how many acked entries an append's commit waits for before it
// deletes them, whole leaves being far cheaper per entry; the price is up to
// rideMin more coming back after a power loss.
const rideMin = 256

// ackDebtMax bounds the cost of acked entries not yet deleted from the file.
func ackDebtMax(budget int64) int64 {
	return min(budget/32, 2<<20)
}

// AcksPending reports whether acknowledged entries may await a committed
// deletion, or values StoreLater kept a commit. It never waits: while a
// commit runs it reports true.
func (w *WAL) AcksPending() bool {
	if !w.wmu.TryLock() {
		return true
	}
	defer w.wmu.Unlock()
	return w.acked.Load() > w.meta.removedSeq || len(w.later) > 0
}

// FlushAcks commits the deletion of the entries acknowledged since the last
// commit, and the values StoreLater kept, if no commit has been made for at
// least idle (0: whatever the time). A caller that drains without appending
// calls it when idle, so the space is given back and a power loss replays
// less.
func (w *WAL) FlushAcks(idle time.Duration) error {
	return w.locked(func() error {
		if w.acked.Load() <= w.meta.removedSeq && len(w.later) == 0 || w.opts.Clock.Boot()-w.lastCommit < idle {
			return nil
		}
		return w.flushAcksLocked()
	})
}

// flushAcksLocked commits the deletion of every acked entry, and the values
// StoreLater kept. It needs wmu.
func (w *WAL) flushAcksLocked() error {
	upTo := w.acked.Load()
	if upTo <= w.meta.removedSeq {
		return w.flushLaterLocked()
	}
	st := w.snapshot()
	w.dbmu.RLock()
	_, err := w.commitRemoval(w.db, st, upTo, nil)
	w.dbmu.RUnlock()
	if err != nil && w.salvageOnWrite(err) {
		// Salvage applied the marks file's number: nothing left to delete.
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: delete entries acknowledged through %d from %s: %w", upTo, w.path, err)
	}
	w.restore(st)
	w.ackCommitted()
	w.stats.AckCommits++
	// A deletion writes new pages too and can push the file past the cap.
	w.enforceCap()
	return nil
}

// ackCommitted notes a commit that deleted or appended, clearing the debt
// if it deleted every acknowledged entry.
func (w *WAL) ackCommitted() {
	w.lastCommit = w.opts.Clock.Boot()
	if w.meta.removedSeq >= w.acked.Load() {
		w.debt = 0
		w.acked.Store(w.meta.removedSeq)
	}
}
