package wal

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// counts are the spool's figures, in WAL and in a state's working copy.
type counts struct {
	meta     meta
	pending  uint64 // events in the spool
	payload  uint64 // their bytes
	firstSeq uint64 // oldest pending sequence, 0 when empty
	firstAt  int64  // its timestamp (unix ns)

	stateKeys  uint64 // keys the state holds (statekeys.go)
	stateBytes int64  // the bytes of their stored values
}

// state is a working copy of the counters, kept only if its transaction commits.
type state struct {
	counts
	prev     meta  // as the file holds it (see storeChanged)
	cost     int64 // the pending entries' cost, see entryCost
	budget   int64
	policy   Policy
	dropped  bool   // events were dropped: space was freed
	acked    uint64 // entries up to this are hidden, deleted or not (see remove.go)
	appended uint64
	// maxStateKeys bounds stateKeys; stateRefused counts the keys it kept out.
	maxStateKeys, stateRefused uint64
	maxStateBytes              int64             // bounds stateBytes (stateShare)
	out                        *handedOut        // what Read handed out: DropOldest keeps it
	later                      map[string][]byte // StoreLater's values (putLater)
	laterPut                   bool              // this commit stored them
	outHeld                    bool              // out.mu is held by this commit (see holdForDrop)
	path                       string            // the spool file, for errors
}

// snapshot starts a working copy of the counters. It needs wmu (or a WAL
// no other goroutine has yet): the copy is the WAL's one scratch state, in
// use until the next snapshot.
func (w *WAL) snapshot() *state {
	w.scratch = state{counts: w.counts, prev: w.meta, cost: w.cost.Load(), budget: w.budget.Load(),
		policy: w.opts.OnFull, acked: w.acked.Load(), path: w.path, maxStateKeys: uint64(w.opts.MaxStateKeys),
		maxStateBytes: w.opts.MaxBytes / stateShare, out: &w.out, later: w.later}
	return &w.scratch
}

// restore keeps st once its transaction has ended well.
func (w *WAL) restore(st *state) {
	w.counts = st.counts
	w.cost.Store(st.cost)
	w.acked.Store(st.acked)
	w.stats.Appended += st.appended
	w.stateRefused.Add(st.stateRefused)
	if st.laterPut {
		clear(w.later)
	}
}

// hidden is the number through which entries are removed or acked.
func (st *state) hidden() uint64 { return max(st.meta.removedSeq, st.acked) }

// hidden is the number through which entries are removed or acked.
func (w *WAL) hidden() uint64 { return max(w.meta.removedSeq, w.acked.Load()) }

// acksRide reports whether the next append's commit deletes the acked
// entries whatever its batch: once there are rideMin of them, or while what
// is pending fits one leaf (the front is in the tail's leaf, and a tree kept
// that small takes fewer pages a commit). A batch that may need their room
// takes them too.
func (st *state) acksRide() bool {
	return st.acked > st.meta.removedSeq && (st.acked-st.meta.removedSeq >= rideMin || st.cost <= costPage)
}

// apply stores the batch's events, dropping per the policy to make room.
func (st *state) apply(tx *bolt.Tx, batch []*appendReq, now stamp) error {
	eb, mb := tx.Bucket(eventsBucket), tx.Bucket(metaBucket)
	eb.FillPercent = 1.0 // keys only ever grow: pack the leaves full
	if st.acksRide() || st.acked > st.meta.removedSeq && st.cost+batchCost(batch) > st.budget {
		if err := st.deleteHidden(eb, mb); err != nil {
			return err
		}
	}
	fr := framer{eb: eb, mem: newArena(batch)}
	for _, r := range batch {
		if r.cost > st.budget {
			r.err = errTooLarge(len(r.events), r.cost, st.budget)
			continue
		}
		if st.cost+fr.cost+fr.priced+r.cost > st.budget {
			switch st.policy {
			case DropNewest:
				st.meta.droppedNewest.add(Counter{uint64(len(r.events)), r.size})
				r.err = ErrFull
				continue
			case DropOldest:
				if err := st.put(&fr, now); err != nil {
					return err
				}
				if err := st.dropOldest(eb, mb, st.cost+r.cost-st.budget); err != nil {
					return err
				}
			}
			// Block: its reservation found room; if enforceCap lowered the
			// budget since, store it anyway rather than drop what Block kept.
		}
		first := st.meta.nextSeq + fr.n
		for _, e := range r.events {
			if err := fr.add(st.meta.nextSeq+fr.n, now, e); err != nil {
				return err
			}
		}
		if len(r.ops) > 0 {
			if err := st.applyState(mb, r.events, r.ops, first, now); err != nil {
				return err
			}
		}
		fr.priced += r.cost
		st.appended += uint64(len(r.events))
		r.last, r.err = st.meta.nextSeq+fr.n-1, nil
	}
	if err := st.put(&fr, now); err != nil {
		return err
	}
	if err := st.putLater(mb); err != nil {
		return err
	}
	return st.meta.storeChanged(mb, &st.prev)
}

// put puts what fr gathered and moves what it added into the counters.
func (st *state) put(fr *framer, now stamp) error {
	err := fr.flush()
	if st.firstSeq == 0 && fr.n > 0 {
		st.firstSeq, st.firstAt = st.meta.nextSeq, now.wall
	}
	st.meta.nextSeq += fr.n
	st.pending += fr.n
	st.payload += fr.payload
	st.cost += fr.cost
	fr.n, fr.payload, fr.cost = 0, 0, 0
	return err
}

// framer packs runs of consecutive events of one stamp into values (see
// encodeValue), each at most frameRoom, and puts each once full.
type framer struct {
	eb     *bolt.Bucket
	mem    arena  // empty: allocate each value
	seq    uint64 // the sequence number of events[0]
	at     stamp
	events [][]byte // the value being gathered
	size   int      // its size as a frame
	priced int64    // Append's price of the requests gathered since the last put

	n, payload uint64 // the events added, and their bytes
	cost       int64  // the cost of the values put
}

// add gathers event seq stamped at, first putting the value gathered if
// seq does not follow it, its stamp differs, or the event does not fit.
func (f *framer) add(seq uint64, at stamp, e []byte) error {
	grown := frameGrow(f.size, len(f.events), len(e))
	if len(f.events) > 0 && (grown > frameRoom || at != f.at || seq != f.seq+uint64(len(f.events))) {
		if err := f.flush(); err != nil {
			return err
		}
		grown = frameGrow(0, 0, len(e))
	}
	if len(f.events) == 0 {
		f.seq, f.at = seq, at
	}
	f.events = append(f.events, e)
	f.size = grown
	f.n++
	f.payload += uint64(len(e))
	return nil
}

// flush puts the value gathered.
func (f *framer) flush() error {
	if len(f.events) == 0 {
		return nil
	}
	key := f.mem.take(keySize)
	binary.BigEndian.PutUint64(key, f.seq)
	n := valueSize(f.events)
	if err := f.eb.Put(key, encodeValue(f.mem.take(n), key, f.at, f.events)); err != nil {
		return err
	}
	cost := entryCost(n - recordHeader)
	f.cost += cost
	clear(f.events)
	f.events, f.size, f.priced = f.events[:0], 0, 0
	return nil
}

func batchCost(batch []*appendReq) int64 {
	var c int64
	for _, r := range batch {
		c += r.cost
	}
	return c
}

func (c *Counter) add(d Counter) {
	c.Events += d.Events
	c.Bytes += d.Bytes
}

// arena hands out the keys and records of one transaction from a single
// allocation; bbolt holds them only until the commit.
type arena []byte

func newArena(batch []*appendReq) arena {
	n := 0
	for _, r := range batch {
		n += len(r.events)*(keySize+recordHeader) + int(r.size)
	}
	return arena(make([]byte, n))
}

func (a *arena) take(n int) []byte {
	if n > len(*a) {
		return make([]byte, n) // not reached: a frame takes less than its events as records
	}
	b := (*a)[:n:n]
	*a = (*a)[n:]
	return b
}
