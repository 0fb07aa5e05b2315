package wal

import (
	"bytes"
	"cmp"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A prefix of the queue is removed one way (Ack, Expire, DropOldest, the
// marks file at Open): state.remove hides it and updates the counters;
// deleteHidden deletes it and moves the removal mark.

// Ack acknowledges every pending entry up to and including upTo: they are
// never returned again, by this process or, after a process crash, the next.
//
// Ack hides the entries and writes upTo into an ack slot of the marks file
// (no fsync: a process crash keeps it). They are gone from disk with the
// next commit that deletes them: an Append's, at once while what is pending
// fits one leaf page, else once 256 are acked or the batch needs their room;
// with no appends, once they cost a 32nd of the size cap (at most 2 MiB), at
// FlushAcks, before a compaction, at Close. If the marks file cannot be
// written, Ack commits the deletion itself. A power cut brings back what was
// acked since the last deleting commit that was synced: one run from the
// head, in order, read again, never lost (with NoSync it can also lose
// recent appends).
func (w *WAL) Ack(upTo uint64) error {
	_, err := w.removeFront(upTo, removeAcked)
	return err
}

// Expire removes every pending entry up to and including upTo, as Ack does,
// but counts them as expired (Stats.Expired), in the same transaction as the
// removal. It returns what this call removed.
func (w *WAL) Expire(upTo uint64) (Counter, error) {
	return w.removeFront(upTo, removeExpired)
}

// removal is how removeFront removes.
type removal int

const (
	removeAcked   removal = iota // hidden; the marks file written
	removeExpired                // deleted at once
)

// removeFront removes the pending entries through upTo: acked ones are
// hidden for a later commit to delete; expired ones are deleted at once.
func (w *WAL) removeFront(upTo uint64, how removal) (gone Counter, err error) {
	expire := how == removeExpired
	err = w.locked(func() error {
		st, g, err := w.removeTx(upTo, expire)
		if err != nil && w.salvageOnWrite(err) {
			// Salvaged (the marks file's number applied): once more.
			st, g, err = w.removeTx(upTo, expire)
		}
		if err != nil {
			op := "acknowledge"
			if expire {
				op = "expire"
			}
			return fmt.Errorf("wal: %s through %d in %s: %w", op, upTo, w.path, err)
		}
		if st == nil {
			if how == removeAcked {
				return w.marks.remove(w.hidden())
			}
			return nil
		}
		gone = g
		markErr := w.marks.remove(st.hidden())
		if !expire {
			w.debt += w.cost.Load() - st.cost
			w.stats.Acked += gone.Events
		}
		w.restore(st)
		if expire {
			w.ackCommitted()
		}
		if st.pending == 0 {
			// Undo enforceCap's lowering: the badly packed entries are gone.
			w.budget.Store(initialBudget(w.opts.MaxBytes))
		}
		if w.opts.OnFull == Block {
			w.group.freed() // only Block's Appends wait for space
		}
		if markErr != nil || w.debt >= ackDebtMax(w.budget.Load()) {
			if err := w.flushAcksLocked(); err != nil {
				return err
			}
		}
		w.maybeReclaim()
		return nil
	})
	return gone, err
}

// removeTx is removeFront's transaction (a write one only to expire); a nil
// state means nothing up to upTo is pending.
func (w *WAL) removeTx(upTo uint64, expire bool) (st *state, gone Counter, err error) {
	if w.firstSeq == 0 || upTo < w.firstSeq {
		return nil, gone, nil
	}
	st = w.snapshot()
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	if expire {
		gone, err = w.commitRemoval(w.db, st, upTo, &st.meta.expired)
		return st, gone, err
	}
	err = guard(w.path, func() error {
		return w.db.View(func(tx *bolt.Tx) (err error) {
			gone, err = st.remove(tx.Bucket(eventsBucket), upTo, 0)
			return err
		})
	})
	return st, gone, err
}

// commitRemoval removes and deletes the entries through upTo in a write
// transaction of its own, counted in into (if not nil).
func (w *WAL) commitRemoval(db *bolt.DB, st *state, upTo uint64, into *Counter) (gone Counter, err error) {
	err = guard(w.path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			eb, mb := tx.Bucket(eventsBucket), tx.Bucket(metaBucket)
			if gone, err = st.remove(eb, upTo, 0); err != nil {
				return err
			}
			if into != nil {
				into.add(gone)
			}
			if err := st.deleteHidden(eb, mb); err != nil {
				return err
			}
			if err := st.putLater(mb); err != nil {
				return err
			}
			return st.meta.store(mb)
		})
	})
	return gone, err
}

// remove hides the pending events through upTo and, while need > 0, whole
// values after them until their cost covers need; it updates the counters
// and firstSeq and moves st.acked past them. A value's cost leaves with its
// last event.
func (st *state) remove(eb *bolt.Bucket, upTo uint64, need int64) (Counter, error) {
	var gone Counter
	from := st.hidden() + 1
	upTo = max(min(upTo, st.meta.nextSeq-1), st.hidden())
	st.firstSeq, st.firstAt = 0, 0
	for val, err := range walk(eb, st.path, from) {
		if err != nil {
			return gone, err
		}
		if need > 0 {
			upTo = max(upTo, val.last())
		}
		events, bytes := val.span(from, upTo)
		gone.add(Counter{events, bytes})
		if val.last() > upTo {
			// The new head: it keeps events after upTo.
			st.firstSeq, st.firstAt = max(val.first, upTo+1), val.at.wall
			break
		}
		st.cost -= val.cost()
		need -= val.cost()
	}
	st.pending -= gone.Events
	st.payload -= gone.Bytes
	st.acked = upTo
	return gone, nil
}

// dropOldest drops whole values until need of cost is freed: from the
// front, or, while Read has handed out pending events, from the first value
// after them (see handedOut). mb is the meta bucket, for the holes.
func (st *state) dropOldest(eb, mb *bolt.Bucket, need int64) error {
	if need <= 0 {
		return nil
	}
	var gone Counter
	var err error
	if from := st.out.holdForDrop(&st.outHeld) + 1; st.firstSeq != 0 && from > st.firstSeq {
		gone, err = st.dropAfter(eb, mb, from, need)
	} else {
		gone, err = st.remove(eb, 0, need)
		if err == nil {
			err = st.deleteHidden(eb, mb)
		}
	}
	st.meta.droppedOldest.add(gone)
	st.dropped = true
	return err
}

// dropAfter deletes whole values that start at from or later, oldest
// first, until their cost covers need. The events before from stay pending,
// and what it drops is listed as a hole (holes.go); a value holding from-1
// stays whole.
func (st *state) dropAfter(eb, mb *bolt.Bucket, from uint64, need int64) (Counter, error) {
	var gone Counter
	var keys [][]byte
	var lo, hi uint64
	for val, err := range walk(eb, st.path, from) {
		if err != nil {
			return gone, err
		}
		if need <= 0 {
			break
		}
		if val.first < from {
			continue
		}
		events, size := val.span(val.first, val.last())
		gone.add(Counter{events, size})
		lo, hi = cmp.Or(lo, val.first), val.last()
		st.cost -= val.cost()
		need -= val.cost()
		keys = append(keys, bytes.Clone(val.key))
	}
	if err := deleteKeys(eb, keys...); err != nil {
		return gone, err
	}
	st.pending -= gone.Events
	st.payload -= gone.Bytes
	if hi != 0 {
		return gone, listHole(mb, SeqRange{lo, hi}, st.path)
	}
	return gone, nil
}

// deleteHidden deletes the values whose events are all hidden, moves the
// removal mark and deletes from mb the holes it passed; a frame with events
// past the mark stays. It walks backwards: bbolt's Delete then Next can skip
// a key, Delete then Prev cannot.
func (st *state) deleteHidden(eb, mb *bolt.Bucket) error {
	upTo := st.hidden()
	c := eb.Cursor()
	k, v := seekValue(c, upTo)
	if k != nil && mustSeq(k) <= upTo {
		// The value holding upTo stays if it has events past it.
		val, err := decodeValue(k, v)
		if err != nil {
			return &CorruptionError{Path: st.path, Seq: mustSeq(k), Err: err}
		}
		if val.last() <= upTo {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	for k, _ = c.Prev(); k != nil; k, _ = c.Prev() {
		if _, err := keySeq(k); err != nil {
			return &CorruptionError{Path: st.path, Err: err}
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	st.meta.removedSeq = upTo
	return pruneHoles(mb, upTo, st.path)
}
