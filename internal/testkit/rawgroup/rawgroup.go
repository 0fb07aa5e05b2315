// Package rawgroup is the least a group commit can do on plain bbolt: the
// yardstick that wal's BenchmarkRawBoltGroup64 and the bench's 64-goroutine
// row hold the spool's own group commit to.
//
// A fixed number of callers append one event per call. The first to find
// no commit running leads: it waits until every caller has queued (1 ms at
// most, or fewer when the events left to come are fewer), puts the events
// in one transaction and wakes them all with one channel close. No record
// header, meta, accounting or pooling. What it loses to one goroutine
// committing the same number of events at a time is the callers' way back
// between commits, which no group commit avoids.
package rawgroup

import (
	"encoding/binary"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commits Appends in groups.
type Group struct {
	db       *bolt.DB
	bucket   []byte
	callers  int
	oneValue bool

	mu      sync.Mutex
	queue   [][]byte
	forming *batch        // the batch the queued events go into
	full    chan struct{} // signalled when the queue holds every caller
	leading bool
	left    int // events no commit has taken yet
	seq     uint64
	commits uint64
	txTime  time.Duration
}

type batch struct {
	done chan struct{} // closed once committed
	err  error
}

// New returns a Group for callers goroutines that append total events in
// all, into bucket (created if missing). With oneValue each commit's events
// go into one value (length-prefixed) under one key, as a spool storing
// several events a key would; otherwise each under its own 8-byte key.
func New(db *bolt.DB, bucket []byte, callers, total int, oneValue bool) (*Group, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Group{db: db, bucket: bucket, callers: callers, oneValue: oneValue,
		forming: &batch{done: make(chan struct{})}, full: make(chan struct{}, 1), left: total}, nil
}

// Append queues ev and returns once its group is committed.
func (g *Group) Append(ev []byte) error {
	g.mu.Lock()
	g.queue = append(g.queue, ev)
	if len(g.queue) >= min(g.callers, g.left) {
		select {
		case g.full <- struct{}{}:
		default:
		}
	}
	b, lead := g.forming, !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		for g.commit() {
		}
	}
	<-b.done
	return b.err
}

// Stats returns the commits made and the time their transactions took.
func (g *Group) Stats() (commits uint64, txTime time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.commits, g.txTime
}

// commit waits for the callers, commits what they queued, and tells whether
// more queued meanwhile: then the leader commits again.
func (g *Group) commit() (again bool) {
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	g.mu.Lock()
	for len(g.queue) < min(g.callers, g.left) {
		g.mu.Unlock()
		select {
		case <-g.full:
			g.mu.Lock()
			continue
		case <-t.C:
		}
		g.mu.Lock()
		break
	}
	events, b := g.queue, g.forming
	g.queue, g.forming = nil, &batch{done: make(chan struct{})}
	g.left -= len(events)
	g.mu.Unlock()

	began := time.Now()
	b.err = g.db.Update(func(tx *bolt.Tx) error { return g.put(tx.Bucket(g.bucket), events) })
	took := time.Since(began)
	g.mu.Lock()
	g.commits, g.txTime = g.commits+1, g.txTime+took
	g.mu.Unlock()
	close(b.done)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.leading = len(g.queue) > 0 // queued during the commit: lead them too
	return g.leading
}

func (g *Group) put(bk *bolt.Bucket, events [][]byte) error {
	if g.oneValue {
		var val []byte
		for _, ev := range events {
			val = binary.AppendUvarint(val, uint64(len(ev)))
			val = append(val, ev...)
		}
		g.seq += uint64(len(events))
		return bk.Put(binary.BigEndian.AppendUint64(nil, g.seq), val)
	}
	for _, ev := range events {
		g.seq++
		if err := bk.Put(binary.BigEndian.AppendUint64(nil, g.seq), ev); err != nil {
			return err
		}
	}
	return nil
}
