package wal

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Entry is one pending event.
type Entry struct {
	Seq  uint64    // sequence number, from 1, consecutive in Append order
	Time time.Time // when it was appended
	Data []byte    // the event bytes; the caller may keep and change them
}

// Read returns pending entries with sequence numbers from from on, oldest
// first, without removing them: at most maxEvents entries and, beyond the
// first, at most maxBytes of event bytes (0 means no limit). A damaged record
// is reported as a *CorruptionError; Repair salvages the spool.
func (w *WAL) Read(from uint64, maxEvents int, maxBytes int) ([]Entry, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	var out []Entry
	err := guard(w.path, func() error {
		return w.db.View(func(tx *bolt.Tx) error {
			var err error
			out, err = w.readTx(tx, from, maxEvents, maxBytes)
			return err
		})
	})
	return out, err
}

func (w *WAL) readTx(tx *bolt.Tx, from uint64, maxEvents, maxBytes int) ([]Entry, error) {
	var out []Entry
	size := 0
	c := tx.Bucket(eventsBucket).Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		if maxEvents > 0 && len(out) >= maxEvents {
			break
		}
		seq, err := keySeq(k)
		if err != nil {
			return out, &CorruptionError{Path: w.path, Err: err}
		}
		ts, data, err := decodeRecord(k, v)
		if err != nil {
			return out, &CorruptionError{Path: w.path, Seq: seq, Err: err}
		}
		if maxBytes > 0 && len(out) > 0 && size+len(data) > maxBytes {
			break
		}
		size += len(data)
		out = append(out, Entry{Seq: seq, Time: time.Unix(0, ts), Data: bytes.Clone(data)})
	}
	return out, nil
}

// Ack removes every pending entry with a sequence number up to and including
// upTo, in one transaction. Acknowledging what is already gone is a no-op.
// Once a backlog has drained, Ack gives the file's space back (see Compact).
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
	var st *state
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		w.dbmu.RLock()
		st = w.snapshot()
		err = guard(w.path, func() error {
			return w.db.Update(func(tx *bolt.Tx) error { return st.ack(tx, upTo) })
		})
		w.dbmu.RUnlock()
		if err == nil || attempt > 0 || !w.salvageOnWrite(err) {
			break
		}
		if w.firstSeq == 0 || upTo < w.firstSeq {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("wal: acknowledge through %d in %s: %w", upTo, w.path, err)
	}
	w.stats.acked += w.pending - st.pending
	w.restore(st)
	w.marks.remove(st.meta.removedSeq)
	w.cost.Store(st.cost)
	if st.pending == 0 {
		// enforceCap lowered the budget for entries that packed badly
		// into pages; they are gone.
		w.budget.Store(initialBudget(w.opts.MaxBytes))
	}
	w.group.freed()
	w.maybeReclaim()
	// Deleting rewrites leaves and the freelist into new pages, and bbolt
	// cannot reuse the pages this very commit freed: an Ack can grow the
	// file too. Bring it back under the cap as a commit would.
	w.enforceCap()
	return nil
}

// salvageOnWrite salvages the spool when a write transaction found damage
// (a torn freelist makes bbolt panic, "page already freed", in every commit
// that frees that page: without this, every Ack failed the same way and the
// drainer retried forever). It reports whether the spool was salvaged and
// the write is worth one more try. The caller holds wmu.
func (w *WAL) salvageOnWrite(err error) bool {
	if !isDamage(err) {
		return false
	}
	_, rerr := w.repairLocked(err)
	return rerr == nil
}

// ack deletes the entries up to upTo. It walks backwards from upTo: Delete
// then Prev never skips a key (Delete then Next can), and it never passes
// over the leaves it emptied, as First() after each Delete would: that walk
// grows with the square of the leaves one Ack empties.
func (st *state) ack(tx *bolt.Tx, upTo uint64) error {
	upTo = min(upTo, st.meta.nextSeq-1)
	eb := tx.Bucket(eventsBucket)
	c := eb.Cursor()
	k, v := c.Seek(seqKey(upTo))
	if k == nil || mustSeq(k) > upTo {
		k, v = c.Prev()
	}
	for ; k != nil; k, v = c.Prev() {
		if _, err := keySeq(k); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
		st.pending--
		st.payload -= uint64(len(v) - recordHeader)
		st.cost -= entryCost(len(v) - recordHeader)
	}
	st.meta.removedSeq = max(st.meta.removedSeq, upTo)
	if err := st.refreshFirst(eb); err != nil {
		return err
	}
	return st.meta.store(tx.Bucket(metaBucket))
}
