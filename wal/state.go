package wal

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// state is a working copy of the spool's counters, changed inside a write
// transaction and kept only if it commits.
type state struct {
	meta     meta
	prev     meta // as the file holds it (see storeChanged)
	pending  uint64
	payload  uint64
	firstSeq uint64
	firstAt  int64
	cost     int64 // the pending entries' cost, see entryCost
	budget   int64
	policy   Policy
	dropped  bool   // events were dropped: space was freed
	acked    uint64 // delete entries up to this first (see ackdefer.go)
	appended uint64
}

func (w *WAL) snapshot() *state {
	return &state{meta: w.meta, prev: w.meta, pending: w.pending, payload: w.payload, firstSeq: w.firstSeq,
		firstAt: w.firstAt, cost: w.cost.Load(), budget: w.budget.Load(), policy: w.opts.OnFull,
		acked: w.acked.Load()}
}

func (w *WAL) restore(st *state) {
	w.meta, w.pending, w.payload, w.firstSeq, w.firstAt = st.meta, st.pending, st.payload, st.firstSeq, st.firstAt
	w.stats.appended += st.appended
}

// apply stores the batch's events, dropping per the policy to make room.
func (st *state) apply(tx *bolt.Tx, batch []*appendReq, now stamp) error {
	eb := tx.Bucket(eventsBucket)
	eb.FillPercent = 1.0 // keys only ever grow: pack the leaves full
	// Acknowledged entries ride in this transaction, deleted before
	// anything is stored: once there are rideMin of them (see
	// ackdefer.go), or at once when the batch may need their room.
	if st.acked > st.meta.removedSeq &&
		(st.acked-st.meta.removedSeq >= rideMin || st.cost+batchCost(batch) > st.budget) {
		if err := deleteThrough(eb, st.acked); err != nil {
			return err
		}
		st.meta.removedSeq = st.acked
	}
	mem := newArena(batch)
	for _, r := range batch {
		if r.cost > st.budget {
			r.err = errTooLarge(r.cost, st.budget)
			continue
		}
		if st.cost+r.cost > st.budget {
			switch st.policy {
			case DropNewest:
				st.meta.droppedNewest.add(r)
				r.err = ErrFull
				continue
			case DropOldest:
				if err := st.dropOldest(eb, st.cost+r.cost-st.budget); err != nil {
					return err
				}
			}
			// Block: the request's reservation found room. If enforceCap
			// lowered the budget since, store it all the same rather than
			// drop events Block promised to keep; later appends wait longer.
		}
		for _, e := range r.events {
			key := mem.take(keySize)
			binary.BigEndian.PutUint64(key, st.meta.nextSeq)
			if err := eb.Put(key, encodeRecordInto(mem.take(recordHeader+len(e)), key, now, e)); err != nil {
				return err
			}
			if st.firstSeq == 0 {
				st.firstSeq, st.firstAt = st.meta.nextSeq, now.wall
			}
			st.meta.nextSeq++
			st.pending++
			st.payload += uint64(len(e))
			st.cost += entryCost(len(e))
		}
		st.appended += uint64(len(r.events))
		r.last, r.err = st.meta.nextSeq-1, nil
	}
	return st.meta.storeChanged(tx.Bucket(metaBucket), &st.prev)
}

func batchCost(batch []*appendReq) int64 {
	var c int64
	for _, r := range batch {
		c += r.cost
	}
	return c
}

func (c *Counter) add(r *appendReq) {
	c.Events += uint64(len(r.events))
	c.Bytes += r.size
}

// dropOldest deletes events from the front until need bytes of cost are freed.
func (st *state) dropOldest(eb *bolt.Bucket, need int64) error {
	c := eb.Cursor()
	// Cursor.Delete then Next can skip a key: seek the head again each time.
	for k, v := c.First(); k != nil && need > 0; k, v = c.First() {
		seq, err := keySeq(k)
		if err != nil {
			return err
		}
		size := recordDataLen(v)
		if err := c.Delete(); err != nil {
			return err
		}
		need -= entryCost(size)
		st.pending--
		st.payload -= uint64(size)
		st.cost -= entryCost(size)
		st.meta.droppedOldest.Events++
		st.meta.droppedOldest.Bytes += uint64(size)
		st.meta.removedSeq = max(st.meta.removedSeq, seq)
		st.dropped = true
	}
	return st.refreshFirst(eb)
}

// refreshFirst re-reads the oldest entry after deletions from the front.
func (st *state) refreshFirst(eb *bolt.Bucket) error {
	k, v := eb.Cursor().First()
	if k == nil {
		st.firstSeq, st.firstAt = 0, 0
		return nil
	}
	seq, err := keySeq(k)
	if err != nil {
		return err
	}
	ts, _, err := decodeRecord(k, v)
	if err != nil {
		return err
	}
	st.firstSeq, st.firstAt = seq, ts
	return nil
}

// arena hands out the keys and records of one transaction from a single
// allocation instead of two per event: bbolt holds on to them until the
// commit has written them out, and not after.
type arena []byte

func newArena(batch []*appendReq) *arena {
	n := 0
	for _, r := range batch {
		n += len(r.events)*(keySize+recordHeader) + int(r.size)
	}
	a := arena(make([]byte, n))
	return &a
}

func (a *arena) take(n int) []byte {
	b := (*a)[:n:n]
	*a = (*a)[n:]
	return b
}
