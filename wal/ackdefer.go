package wal

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
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

// ackDebt is what Ack hid but no commit has deleted yet (guarded by wmu).
type ackDebt struct {
	events uint64
	cost   int64
}

// Ack acknowledges every pending entry with a sequence number up to and
// including upTo: they are never returned again, by this process or, after
// a crash of the process, by the next one. Acknowledging what is already
// gone is a no-op.
//
// Ack does not commit: it records upTo in the marks file (no fsync) and
// an append transaction deletes the entries once rideMin are waiting; with
// no appends they are deleted in batches (see FlushAcks). After a power
// loss, entries acknowledged but not yet deleted by a synced commit may
// come back, as one contiguous in-order run from the head. If the marks
// file cannot be written, Ack commits the deletion at once. Once a backlog
// has drained, Ack gives the file's space back (see Compact).
func (w *WAL) Ack(upTo uint64) error {
	if err := w.ready(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if w.firstSeq == 0 || upTo < w.firstSeq {
		return nil
	}
	upTo = min(upTo, w.meta.nextSeq-1)
	h, err := w.hide(upTo)
	if err != nil && w.salvageOnWrite(err) {
		// Damage: salvaged (the mark of earlier Acks applied); once more.
		if w.firstSeq == 0 || upTo < w.firstSeq {
			return nil
		}
		h, err = w.hide(upTo)
	}
	if err != nil {
		return fmt.Errorf("wal: acknowledge through %d in %s: %w", upTo, w.path, err)
	}
	markErr := w.marks.remove(upTo)
	w.acked.Store(upTo)
	w.pending -= h.events
	w.payload -= h.bytes
	w.firstSeq, w.firstAt = h.nextSeq, h.nextAt
	w.cost.Add(-h.cost)
	w.debt.events += h.events
	w.debt.cost += h.cost
	w.stats.acked += h.events
	if w.pending == 0 {
		// enforceCap lowered the budget for entries that packed badly
		// into pages; they are gone (or going, before the next append).
		w.budget.Store(initialBudget(w.opts.MaxBytes))
	}
	w.group.freed()
	if markErr != nil || w.debt.cost >= ackDebtMax(w.budget.Load()) {
		if err := w.flushAcksLocked(); err != nil {
			return err
		}
	}
	w.maybeReclaim()
	return nil
}

// hidden is what acknowledging through upTo takes out of view.
type hidden struct {
	events, bytes uint64
	cost          int64
	nextSeq       uint64 // the oldest entry left, 0 if none
	nextAt        int64
}

// hide counts the entries from the oldest visible one through upTo and
// finds the one after them, in a read transaction: no commit.
func (w *WAL) hide(upTo uint64) (h hidden, err error) {
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	err = guard(w.path, func() error {
		return w.db.View(func(tx *bolt.Tx) error {
			h, err = w.hideTx(tx, upTo)
			return err
		})
	})
	return h, err
}

func (w *WAL) hideTx(tx *bolt.Tx, upTo uint64) (hidden, error) {
	var h hidden
	c := tx.Bucket(eventsBucket).Cursor()
	from := w.firstSeq
	for k, v := seekValue(c, from); k != nil; k, v = c.Next() {
		val, err := w.readValue(k, v)
		if err != nil {
			return h, err
		}
		events, bytes := val.span(from, upTo)
		h.events += events
		h.bytes += bytes
		if val.last() > upTo {
			h.nextSeq, h.nextAt = max(val.first, upTo+1), val.at.wall
			return h, nil
		}
		h.cost += val.cost() // leaves with its last event
	}
	return h, nil
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
	m := w.meta
	w.dbmu.RLock()
	err := guard(w.path, func() error {
		return w.db.Update(func(tx *bolt.Tx) error { return deleteAcked(tx, w.path, &m, upTo) })
	})
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
	w.meta = m
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
		w.debt = ackDebt{}
		w.acked.Store(w.meta.removedSeq)
	}
}

// deleteAcked deletes the entries up to upTo inside a write transaction and
// moves the removed-through number to it. The counters are not touched:
// Ack took the entries out of them when it hid them.
func deleteAcked(tx *bolt.Tx, path string, m *meta, upTo uint64) error {
	if upTo <= m.removedSeq {
		return nil
	}
	if err := deleteThrough(tx.Bucket(eventsBucket), path, upTo); err != nil {
		return err
	}
	m.removedSeq = upTo
	return m.store(tx.Bucket(metaBucket))
}

// deleteThrough deletes every value whose events all lie up to upTo (a
// frame that holds upTo and events after it stays: the removal mark hides
// the rest). It walks backwards from upTo: Delete then Prev never skips a
// key (Delete then Next can), and it never passes over the leaves it
// emptied, as First() after each Delete would.
func deleteThrough(eb *bolt.Bucket, path string, upTo uint64) error {
	c := eb.Cursor()
	k, v := seekValue(c, upTo)
	if k != nil && mustSeq(k) <= upTo {
		// The value holding upTo: checked, for its count decides whether
		// it stays.
		val, err := decodeValue(k, v)
		if err != nil {
			return &CorruptionError{Path: path, Seq: mustSeq(k), Err: err}
		}
		if val.last() <= upTo {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	for k, _ = c.Prev(); k != nil; k, _ = c.Prev() {
		if _, err := keySeq(k); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
