package wal

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Append commits events to the spool in one transaction, with consecutive
// sequence numbers, and returns the sequence number of the last one. When it
// returns nil the events are durable (fsync'd, unless Options.NoSync).
//
// Concurrent Appends share one transaction and fsync. When the spool is
// full, Options.OnFull decides (see Policy). An event that could never fit is
// refused with ErrTooLarge. The events are copied; the caller keeps them.
func (w *WAL) Append(ctx context.Context, events ...[]byte) (last uint64, err error) {
	return w.appendOps(ctx, events, nil)
}

// appendOps is Append with the events' state ops (AppendState).
func (w *WAL) appendOps(ctx context.Context, events [][]byte, ops []StateOp) (last uint64, err error) {
	if err := w.ready(); err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, nil
	}
	req := newReq(events)
	req.ops = ops
	defer req.release()
	for _, e := range events {
		req.cost += entryCost(len(e))
		req.size += uint64(len(e))
	}
	if w.opts.OnFull == Block {
		if err := w.reserve(ctx, req); err != nil {
			return 0, err
		}
	}
	w.group.run(req, w.commit)
	return req.last, req.err
}

// reserve waits until req fits beside what is stored and what is queued.
func (w *WAL) reserve(ctx context.Context, req *appendReq) error {
	g := &w.group
	for {
		g.mu.Lock()
		budget := w.budget.Load()
		if req.cost > budget {
			g.mu.Unlock()
			return errTooLarge(len(req.events), req.cost, budget)
		}
		if w.cost.Load()+g.reserved+req.cost <= budget {
			g.reserved += req.cost
			req.reserved = true
			g.mu.Unlock()
			return nil
		}
		space := g.space
		g.mu.Unlock()
		select {
		case <-space:
		case <-g.closed:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("%w: waited for space until %w", ErrFull, ctx.Err())
		}
	}
}

// commit writes a batch in one transaction; on failure the state is kept
// and every request gets the error.
func (w *WAL) commit(batch []*appendReq) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.Usable(); err != nil {
		setErr(batch, err)
		return
	}
	st, err := w.commitTx(batch)
	if err != nil && w.salvageOnWrite(err) {
		// Damage found by the commit itself: salvaged, so once more.
		st, err = w.commitTx(batch)
	}
	if err != nil {
		setErr(batch, fmt.Errorf("wal: commit to %s: %w", w.path, err))
		w.stats.CommitErrors++
		return
	}
	if st.dropped && w.opts.OnLoss != nil {
		d := st.meta.droppedOldest
		w.opts.OnLoss(Loss{Dropped: Counter{d.Events - w.meta.droppedOldest.Events, d.Bytes - w.meta.droppedOldest.Bytes}})
	}
	w.restore(st)
	w.ackCommitted()
	w.stats.Commits++
	if st.dropped {
		w.marks.remove(w.hidden())
		w.group.freed()
	}
	w.enforceCap()
}

// commitTx reserves the batch's sequence numbers and commits it.
func (w *WAL) commitTx(batch []*appendReq) (*state, error) {
	n := uint64(0)
	for _, r := range batch {
		n += uint64(len(r.events))
	}
	if err := w.marks.reserve(w.meta.nextSeq + n); err != nil {
		return nil, err
	}
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	st, now := w.snapshot(), w.stampNow()
	defer st.out.release(&st.outHeld)
	st.meta.noteBoot(bootKey(w.opts.Clock))
	began, wrote := w.opts.Clock.Boot(), writeTime(w.db)
	err := guard(w.path, func() error {
		return w.db.Update(func(tx *bolt.Tx) error { return st.apply(tx, batch, now) })
	})
	if err != nil {
		return nil, err
	}
	// wmu: no other write transaction moved bbolt's write time.
	w.stats.CommitTime += w.opts.Clock.Boot() - began
	w.stats.CommitWriteTime += writeTime(w.db) - wrote
	return st, nil
}

// writeTime is how long db's commits spent writing and fsyncing pages.
func writeTime(db *bolt.DB) time.Duration {
	st := db.Stats()
	return st.TxStats.GetWriteTime()
}

func setErr(batch []*appendReq, err error) {
	for _, r := range batch {
		r.err, r.last = err, 0
	}
}
