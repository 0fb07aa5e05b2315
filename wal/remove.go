package wal

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A prefix of the queue is removed one way, whether acknowledged (Ack),
// expired (Expire), dropped to make room (DropOldest) or applied from the
// marks file at Open: state.remove takes the events out of view and out of
// the counters, and moves the number through which entries are hidden;
// deleteHidden deletes them from the file and moves its removal mark.
// Acknowledged entries wait for a later commit to delete them (see
// ackdefer.go); the others are deleted by the commit that removes them.

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
	_, err := w.removeFront(upTo, false)
	return err
}

// Expire removes every pending entry up to and including upTo, as Ack does,
// but counts them as expired rather than delivered: the caller found them
// too old to be worth sending. The count is kept in the meta bucket
// (expired_events, expired_bytes) in the same transaction as the removal, so
// it survives restarts like the drop counters, and Stats.Expired reports it.
// It returns what this call removed. Expiring what is already gone is a
// no-op.
func (w *WAL) Expire(upTo uint64) (Counter, error) {
	return w.removeFront(upTo, true)
}

// removeFront removes the pending entries through upTo (see state.remove):
// acknowledged, they are hidden and counted in Stats.Acked, and a later
// commit deletes them; expired, they are deleted and counted in the file in
// a commit of their own.
func (w *WAL) removeFront(upTo uint64, expire bool) (Counter, error) {
	if err := w.ready(); err != nil {
		return Counter{}, err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return Counter{}, err
	}
	st, gone, err := w.removeTx(upTo, expire)
	if err != nil && w.salvageOnWrite(err) {
		// Salvaged (the marks file's number applied): once more.
		st, gone, err = w.removeTx(upTo, expire)
	}
	if err != nil {
		op := "acknowledge"
		if expire {
			op = "expire"
		}
		return Counter{}, fmt.Errorf("wal: %s through %d in %s: %w", op, upTo, w.path, err)
	}
	if st == nil {
		return Counter{}, nil
	}
	markErr := w.marks.remove(st.hidden())
	if !expire {
		w.debt += w.cost.Load() - st.cost
		w.stats.acked += gone.Events
	}
	w.restore(st)
	if expire {
		w.ackCommitted()
	}
	if st.pending == 0 {
		// enforceCap lowered the budget for entries that packed badly
		// into pages; they are gone (or going, before the next append).
		w.budget.Store(initialBudget(w.opts.MaxBytes))
	}
	w.group.freed()
	if markErr != nil || w.debt >= ackDebtMax(w.budget.Load()) {
		if err := w.flushAcksLocked(); err != nil {
			return gone, err
		}
	}
	w.maybeReclaim()
	return gone, nil
}

// removeTx is removeFront's transaction: a read transaction to acknowledge,
// a write transaction to expire. It returns a nil state when nothing up to
// upTo is pending.
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

// commitRemoval removes the pending entries through upTo (see
// state.remove), counted in into (nil: not counted), and deletes them and
// any acknowledged before, in a write transaction of its own on db.
func (w *WAL) commitRemoval(db *bolt.DB, st *state, upTo uint64, into *Counter) (gone Counter, err error) {
	err = guard(w.path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			eb := tx.Bucket(eventsBucket)
			if gone, err = st.remove(eb, upTo, 0); err != nil {
				return err
			}
			if into != nil {
				into.add(gone)
			}
			if err := st.deleteHidden(eb); err != nil {
				return err
			}
			return st.meta.store(tx.Bucket(metaBucket))
		})
	})
	return gone, err
}

// remove takes a prefix of the queue out of view: the pending events
// through upTo and, while need > 0, whole values after them until their
// cost covers need. It takes them out of the counters, returns them, finds
// the oldest entry left and moves st.acked, the number through which
// entries are hidden, past them.
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
			st.firstSeq, st.firstAt = max(val.first, upTo+1), val.at.wall
			break
		}
		st.cost -= val.cost() // a frame's cost leaves with its last event
		need -= val.cost()
	}
	st.pending -= gone.Events
	st.payload -= gone.Bytes
	st.acked = upTo
	return gone, nil
}

// dropOldest removes whole values from the front until need of cost is
// freed, counted as dropped.
func (st *state) dropOldest(eb *bolt.Bucket, need int64) error {
	if need <= 0 {
		return nil
	}
	gone, err := st.remove(eb, 0, need)
	if err == nil {
		err = st.deleteHidden(eb)
	}
	st.meta.droppedOldest.add(gone)
	st.dropped = true
	return err
}

// deleteHidden deletes the values whose events are all hidden (see remove)
// and moves the file's removal mark to them; a frame that holds events past
// the mark stays, the rest of it hidden by the mark. It walks backwards:
// Delete then Prev never skips a key (Delete then Next can), and it never
// passes over the leaves it emptied, as First() after each Delete would.
func (st *state) deleteHidden(eb *bolt.Bucket) error {
	upTo := st.hidden()
	c := eb.Cursor()
	k, v := seekValue(c, upTo)
	if k != nil && mustSeq(k) <= upTo {
		// The value holding upTo: checked, for its count decides whether
		// it stays.
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
	return nil
}
