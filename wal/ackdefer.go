package wal

import (
	"fmt"
	"time"
)

// Acknowledgements cost no synced commit of their own while appends flow.
// Ack records the acknowledged-through number in the marks file (a write to
// the page cache, which a killed process cannot lose), hides the entries
// from Read, Len and Stats at once, and leaves their deletion from spool.db
// to the append transactions, which delete them before they store anything
// once there are rideMin of them. When no append comes, the deletions are
// committed on their own, batched: when the acknowledged entries still in
// the file cost more than ackDebtMax, when FlushAcks finds the spool idle
// (the emitter's drainer calls it), before a compaction, and at Close.
//
// After a process crash, Open applies the marks file's number (see
// applyRemovedMark): no acknowledged event comes back. After a power loss
// (the number is not fsync'd) the file holds what its last synced commit
// held: the acknowledged entries it had not yet deleted come back, and as
// deletions always take a prefix, they come back as one contiguous run from
// the head, in order.

// rideMin is how many acknowledged entries an append's commit waits for
// before it deletes them: deleting one commit's worth at every commit
// (64 entries, say) cost a third of a 64-event commit's own work, as
// cursor deletes and the rebalancing of a half-emptied leaf, where a run of
// a few hundred empties whole leaves, at a third of the cost an entry.
// The price: after a power loss up to rideMin more
// acknowledged entries come back, as part of the same contiguous run.
const rideMin = 256

// ackDebtMax bounds the cost of entries acknowledged but not yet deleted
// from the file: they still take pages, and one commit deletes them all.
func ackDebtMax(budget int64) int64 {
	return min(budget/32, 2<<20)
}

// AcksPending reports whether acknowledged entries may wait for their
// deletion to be committed (by the next append, or FlushAcks). It never
// waits: while a commit runs it reports true.
func (w *WAL) AcksPending() bool {
	if !w.wmu.TryLock() {
		return true
	}
	defer w.wmu.Unlock()
	return w.acked.Load() > w.meta.removedSeq
}

// FlushAcks commits the deletion of the entries acknowledged since the last
// commit, if no commit has been made for at least idle (0: whatever the
// time). While appends flow each carries the deletions; a caller that drains
// without appending calls it when it goes idle, so that the acknowledged
// entries' space is given back and a power loss replays less.
func (w *WAL) FlushAcks(idle time.Duration) error {
	if err := w.ready(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if w.acked.Load() <= w.meta.removedSeq || time.Since(w.lastCommit) < idle {
		return nil
	}
	return w.flushAcksLocked()
}

// flushAcksLocked commits the deletion of every entry up to the
// acknowledged-through number. The caller holds wmu.
func (w *WAL) flushAcksLocked() error {
	upTo := w.acked.Load()
	if upTo <= w.meta.removedSeq {
		return nil
	}
	st := w.snapshot()
	w.dbmu.RLock()
	_, err := w.commitRemoval(w.db, st, upTo, nil)
	w.dbmu.RUnlock()
	if err != nil && w.salvageOnWrite(err) {
		// A torn freelist makes bbolt panic in every commit that frees
		// the page: salvaged instead, which applied the marks file's
		// removed-through number (upTo): nothing is left to delete.
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: delete entries acknowledged through %d from %s: %w", upTo, w.path, err)
	}
	w.restore(st)
	w.ackCommitted()
	w.stats.ackCommits++
	// Deleting rewrites leaves and the freelist into new pages, and bbolt
	// cannot reuse the pages this very commit freed: bring the file back
	// under the cap as an append does.
	w.enforceCap()
	return nil
}

// ackCommitted notes a commit that deleted or appended. If it deleted every
// acknowledged entry, nothing is owed any more; an append's commit may have
// left them for later (rideMin, see state.apply).
func (w *WAL) ackCommitted() {
	w.lastCommit = time.Now()
	if w.meta.removedSeq >= w.acked.Load() {
		w.debt = 0
		w.acked.Store(w.meta.removedSeq)
	}
}
