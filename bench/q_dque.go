package main

import (
	"errors"
	"sync/atomic"

	"github.com/joncrlsn/dque"
)

// dqueItemsPerSegment is dque's segment size in items. dque holds its first
// and last segments in memory.
const dqueItemsPerSegment = 10_000

// dqueItem is what dque stores (it gob-encodes a struct per item).
type dqueItem struct{ B []byte }

// dqueQueue adapts github.com/joncrlsn/dque. dque can only peek at its head,
// so peek dequeues a batch into memory and ack forgets it: a crash of the
// emitter loses that in-flight batch (at most batchEvents events). Turbo mode
// is on and, with sync, TurboSync follows each appended batch and each ack:
// one fsync per batch, where dque's default fsyncs every Enqueue and every
// Dequeue.
type dqueQueue struct {
	q        *dque.DQue
	sync     bool
	inflight [][]byte // owned by the drainer
	held     atomic.Int64
}

func openDque(dir string, sync bool) (*dqueQueue, error) {
	q, err := dque.NewOrOpen("q", dir, dqueItemsPerSegment, func() any { return &dqueItem{} })
	if err != nil {
		return nil, err
	}
	if err := q.TurboOn(); err != nil {
		return nil, err
	}
	return &dqueQueue{q: q, sync: sync}, nil
}

func (d *dqueQueue) append(events [][]byte) error {
	for _, e := range events {
		if err := d.q.Enqueue(&dqueItem{B: append([]byte(nil), e...)}); err != nil {
			return err
		}
	}
	if d.sync {
		return d.q.TurboSync()
	}
	return nil
}

func (d *dqueQueue) peek(max int) ([][]byte, error) {
	for len(d.inflight) < max {
		it, err := d.q.Dequeue()
		if errors.Is(err, dque.ErrEmpty) {
			break
		}
		if err != nil {
			return nil, err
		}
		d.inflight = append(d.inflight, it.(*dqueItem).B)
		d.held.Add(1)
	}
	return d.inflight[:min(max, len(d.inflight))], nil
}

func (d *dqueQueue) ack(n int) error {
	d.inflight = d.inflight[n:]
	d.held.Add(int64(-n))
	if d.sync {
		return d.q.TurboSync()
	}
	return nil
}

func (d *dqueQueue) pending() int { return d.q.Size() + int(d.held.Load()) }

func (d *dqueQueue) close() error { return d.q.Close() }
