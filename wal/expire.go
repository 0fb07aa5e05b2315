package wal

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Expire removes every pending entry up to and including upTo, as Ack does,
// but counts them as expired rather than delivered: the caller found them
// too old to be worth sending. The count is kept in the meta bucket
// (expired_events, expired_bytes) in the same transaction as the removal, so
// it survives restarts like the drop counters, and Stats.Expired reports it.
// It returns what this call removed. Expiring what is already gone is a
// no-op.
func (w *WAL) Expire(upTo uint64) (Counter, error) {
	if err := w.usable(); err != nil {
		return Counter{}, err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return Counter{}, err
	}
	if w.firstSeq == 0 || upTo < w.firstSeq {
		return Counter{}, nil
	}
	w.dbmu.RLock()
	st := w.snapshot()
	var gone Counter
	err := guard(w.path, func() error {
		return w.db.Update(func(tx *bolt.Tx) error {
			// Entries acknowledged but not yet deleted (see ackdefer.go)
			// are out of the counters already: delete them first, so
			// that ack below counts only what expires.
			if err := deleteAcked(tx, w.path, &st.meta, st.acked); err != nil {
				return err
			}
			events, bytes := st.pending, st.payload
			if err := st.ack(tx, upTo); err != nil {
				return err
			}
			gone = Counter{Events: events - st.pending, Bytes: bytes - st.payload}
			st.meta.expired.Events += gone.Events
			st.meta.expired.Bytes += gone.Bytes
			return st.meta.store(tx.Bucket(metaBucket))
		})
	})
	w.dbmu.RUnlock()
	if err != nil {
		return Counter{}, fmt.Errorf("wal: expire through %d in %s: %w", upTo, w.path, err)
	}
	// What follows is Ack's bookkeeping, bar the acked count.
	w.restore(st)
	w.ackCommitted()
	w.marks.remove(st.meta.removedSeq)
	w.cost.Store(st.cost)
	if st.pending == 0 {
		w.budget.Store(initialBudget(w.opts.MaxBytes))
	}
	w.group.freed()
	w.maybeReclaim()
	return gone, nil
}
