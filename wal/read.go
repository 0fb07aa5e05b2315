package wal

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// Entry is one pending event.
type Entry struct {
	Seq  uint64    // sequence number, from 1, consecutive in Append order
	Time time.Time // when it was appended, on the wall clock
	// Boot is the boot clock (CLOCK_BOOTTIME) when it was appended, and
	// ThisBoot whether that was in the boot the spool's clock is in now:
	// only then does Boot compare with Clock.Boot(). See Age.
	Boot     time.Duration
	ThisBoot bool
	Data     []byte // the event bytes; the caller may keep and change them
}

// Read returns pending entries with sequence numbers from from on, oldest
// first, without removing them (acknowledged ones are never returned): at
// most maxEvents entries and, beyond the first, at most maxBytes of event
// bytes (0 means no limit). A damaged record is reported as a
// *CorruptionError; Repair salvages the spool. While appends flow, it first
// lets the next group commit start (at most 2 ms; see awaitRegroup).
func (w *WAL) Read(from uint64, maxEvents int, maxBytes int) ([]Entry, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	w.group.awaitRegroup()
	// Entries acknowledged but not yet deleted from the file are hidden.
	from = max(from, w.acked.Load()+1)
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
	out, err := w.peekTx(tx, from, maxEvents, maxBytes)
	// The entries' bytes point into the file's mapping, valid only in this
	// transaction: copy them out, into one allocation.
	size := 0
	for _, e := range out {
		size += len(e.Data)
	}
	buf := make([]byte, 0, size)
	for i, e := range out {
		buf = append(buf, e.Data...)
		out[i].Data = buf[len(buf)-len(e.Data) : len(buf) : len(buf)]
	}
	return out, err
}

// peekTx is readTx without the copy.
func (w *WAL) peekTx(tx *bolt.Tx, from uint64, maxEvents, maxBytes int) ([]Entry, error) {
	var out []Entry
	size := 0
	c := tx.Bucket(eventsBucket).Cursor()
	boot := w.thisBoot(tx.Bucket(metaBucket))
	full := false
	for k, v := seekValue(c, from); k != nil && !full; k, v = c.Next() {
		val, err := w.readValue(k, v)
		if err != nil {
			return out, err
		}
		val.each(from, func(seq uint64, data []byte) bool {
			if (maxEvents > 0 && len(out) >= maxEvents) || (maxBytes > 0 && len(out) > 0 && size+len(data) > maxBytes) {
				full = true
				return false
			}
			size += len(data)
			e := Entry{Seq: seq, Data: data}
			entryAt(&e, val.at, boot)
			out = append(out, e)
			return true
		})
	}
	return out, nil
}

// seekValue positions c at the value that holds seq (a frame may begin
// before it), or else at the first value after it, and returns it.
func seekValue(c *bolt.Cursor, seq uint64) (k, v []byte) {
	k, v = c.Seek(seqKey(seq))
	if k != nil && mustSeq(k) == seq {
		return k, v
	}
	if pk, pv := c.Prev(); pk != nil {
		// Checked here, not only by the caller: a damaged count must not
		// make Read pass over events that are there.
		if val, err := decodeValue(pk, pv); err != nil || val.last() >= seq {
			return pk, pv
		}
	}
	return c.Seek(seqKey(seq))
}

// readValue decodes the value under k for a read of the file: a key that
// is not a sequence number and a value that fails its check are damage.
func (w *WAL) readValue(k, v []byte) (value, error) {
	seq, err := keySeq(k)
	if err != nil {
		return value{}, &CorruptionError{Path: w.path, Err: err}
	}
	return decodeAt(w.path, seq, k, v)
}

// readValue decodes the value under k for a walk inside a write
// transaction: a value that fails its check is damage; a key that is not a
// sequence number is returned as it is, as the walks always have.
func (st *state) readValue(k, v []byte) (value, error) {
	seq, err := keySeq(k)
	if err != nil {
		return value{}, err
	}
	return decodeAt(st.path, seq, k, v)
}

// decodeAt is decodeValue, its error the damage at seq in the file at path.
func decodeAt(path string, seq uint64, k, v []byte) (value, error) {
	val, err := decodeValue(k, v)
	if err != nil {
		return value{}, &CorruptionError{Path: path, Seq: seq, Err: err}
	}
	return val, nil
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

// ack deletes the entries up to upTo and takes out of the counters those
// above the removal mark (those at or below it are out already). A frame
// that holds upTo and events after it stays, its events up to upTo hidden
// by the mark. It walks backwards from upTo: Delete then Prev never skips a
// key (Delete then Next can), and it never passes over the leaves it
// emptied, as First() after each Delete would: that walk grows with the
// square of the leaves one Ack empties.
func (st *state) ack(tx *bolt.Tx, upTo uint64) error {
	upTo = min(upTo, st.meta.nextSeq-1)
	eb := tx.Bucket(eventsBucket)
	c := eb.Cursor()
	k, v := seekValue(c, upTo)
	if k == nil || mustSeq(k) > upTo {
		k, v = c.Prev()
	}
	for ; k != nil; k, v = c.Prev() {
		val, err := st.readValue(k, v)
		if err != nil {
			return err
		}
		events, bytes := val.span(st.hidden()+1, upTo)
		st.pending -= events
		st.payload -= bytes
		if val.last() > upTo {
			continue // holds events past upTo: stays
		}
		if val.last() > st.hidden() {
			st.cost -= val.cost()
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	st.meta.removedSeq = max(st.meta.removedSeq, upTo)
	if err := st.refreshFirst(eb); err != nil {
		return err
	}
	return st.meta.store(tx.Bucket(metaBucket))
}
