package wal

import (
	"fmt"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Entry is one pending event.
type Entry struct {
	Seq  uint64    // sequence number, from 1, consecutive in Append order
	Time time.Time // when it was appended, on the wall clock
	// Boot is CLOCK_BOOTTIME at append; it compares with Clock.Boot() only
	// if ThisBoot (appended in the current boot). See Age.
	Boot     time.Duration
	ThisBoot bool
	Data     []byte // the event bytes; the caller may keep and change them
}

// Read returns pending entries from sequence number from on, oldest first,
// without removing them: at most maxEvents entries and, beyond the first, at
// most maxBytes of event bytes (0: no limit). A damaged record is reported as
// a *CorruptionError (see Repair).
func (w *WAL) Read(from uint64, maxEvents int, maxBytes int) ([]Entry, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	// Entries acknowledged but not yet deleted from the file are hidden.
	from = max(from, w.acked.Load()+1)
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	var out []Entry
	w.out.mu.RLock()
	err := guard(w.path, func() error {
		return w.db.View(func(tx *bolt.Tx) error {
			var err error
			out, err = w.readTx(tx, from, maxEvents, maxBytes)
			return err
		})
	})
	if len(out) > 0 {
		w.out.note(out[len(out)-1].Seq)
	}
	w.out.mu.RUnlock()
	return out, err
}

// readTx is Read in tx; the bytes are copied out of the mapping at once.
func (w *WAL) readTx(tx *bolt.Tx, from uint64, maxEvents, maxBytes int) ([]Entry, error) {
	var out []Entry
	var err error
	size := 0
	boot := w.thisBoot(tx.Bucket(metaBucket))
	full := false
	for val, werr := range walk(tx.Bucket(eventsBucket), w.path, from) {
		if err = werr; err != nil {
			break
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
		if full {
			break
		}
	}
	buf := make([]byte, 0, size)
	for i, e := range out {
		buf = append(buf, e.Data...)
		out[i].Data = buf[len(buf)-len(e.Data) : len(buf) : len(buf)]
	}
	return out, err
}

// stored is a checked value of the events bucket with its raw key and bytes.
type stored struct {
	value
	key, raw []byte
}

// walk yields the values of the events bucket in order, from the one that
// holds from on, each checked; damage ends the walk as a *CorruptionError.
// The values alias the mapping: valid in the transaction only.
func walk(eb *bolt.Bucket, path string, from uint64) iter.Seq2[stored, error] {
	return func(yield func(stored, error) bool) {
		c := eb.Cursor()
		var prev uint64 // the last sequence number of the value before
		for k, v := seekValue(c, from); k != nil; k, v = c.Next() {
			seq, err := keySeq(k)
			var val value
			switch {
			case err != nil:
			case seq <= prev:
				err = fmt.Errorf("key %d after key %d: keys out of order", seq, prev)
			default:
				val, err = decodeValue(k, v)
			}
			if err != nil {
				yield(stored{}, &CorruptionError{Path: path, Seq: seq, Err: err})
				return
			}
			if !yield(stored{val, k, v}, nil) {
				return
			}
			prev = val.last()
		}
	}
}

// seekValue positions c at the value holding seq, or else the next one.
func seekValue(c *bolt.Cursor, seq uint64) (k, v []byte) {
	k, v = c.Seek(seqKey(seq))
	if k != nil && mustSeq(k) == seq {
		return k, v
	}
	if pk, pv := c.Prev(); pk != nil {
		// Checked here so a damaged count cannot skip events.
		if val, err := decodeValue(pk, pv); err != nil || val.last() >= seq {
			return pk, pv
		}
	}
	return c.Seek(seqKey(seq))
}

// salvageOnWrite salvages the spool when a write transaction found damage
// (a torn freelist makes every commit that frees the page panic). It reports
// whether the write is worth one more try. The caller holds wmu.
func (w *WAL) salvageOnWrite(err error) bool {
	if !isDamage(err) {
		return false
	}
	_, rerr := w.repairLocked(err)
	return rerr == nil
}
