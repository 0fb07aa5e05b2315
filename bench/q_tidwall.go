package main

import (
	"sync"
	"sync/atomic"

	"github.com/tidwall/wal"
)

// tidwallQueue adapts github.com/tidwall/wal: Write appends at the next
// index, Read peeks, TruncateFront acknowledges (AllowEmpty lets the log be
// emptied). With sync, each appended batch is one fsync (the log's default);
// TruncateFront rewrites what remains of the first segment and fsyncs it.
type tidwallQueue struct {
	log   *wal.Log
	amu   sync.Mutex // orders appends: indexes must be consecutive
	batch wal.Batch
	last  atomic.Uint64 // last index written
	first uint64        // oldest unacknowledged index; owned by the drainer
}

func openTidwall(dir string, sync bool) (*tidwallQueue, error) {
	l, err := wal.Open(dir, &wal.Options{
		NoSync: !sync, SegmentSize: wal.DefaultOptions.SegmentSize, SegmentCacheSize: 2,
		AllowEmpty: true, DirPerms: 0o750, FilePerms: 0o640,
	})
	if err != nil {
		return nil, err
	}
	first, err := l.FirstIndex()
	if err != nil {
		return nil, err
	}
	last, err := l.LastIndex()
	if err != nil {
		return nil, err
	}
	t := &tidwallQueue{log: l, first: first}
	t.last.Store(last)
	return t, nil
}

func (t *tidwallQueue) append(events [][]byte) error {
	t.amu.Lock()
	defer t.amu.Unlock()
	next := t.last.Load() + 1
	for i, e := range events {
		t.batch.Write(next+uint64(i), e)
	}
	if err := t.log.WriteBatch(&t.batch); err != nil {
		t.batch.Clear()
		return err
	}
	t.last.Store(next + uint64(len(events)) - 1)
	return nil
}

func (t *tidwallQueue) peek(max int) ([][]byte, error) {
	last := t.last.Load()
	var out [][]byte
	for i := t.first; i <= last && len(out) < max; i++ {
		b, err := t.log.Read(i)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (t *tidwallQueue) ack(n int) error {
	t.first += uint64(n)
	return t.log.TruncateFront(t.first)
}

// pending asks the log for its first index: t.first belongs to the drainer.
func (t *tidwallQueue) pending() int {
	return int(t.last.Load() + 1 - t.firstIndex())
}

func (t *tidwallQueue) firstIndex() uint64 {
	i, err := t.log.FirstIndex()
	if err != nil {
		return t.last.Load() + 1
	}
	return i
}

func (t *tidwallQueue) close() error { return t.log.Close() }
