package main

import (
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// leastDurable is the least a durable emitter does per line, a yardstick
// for evspool's cost, not a delivery contender: one bbolt transaction per
// line (default options, fsync on commit) that puts the line under the next
// key and deletes the previous line's key, then one write of the line to the
// socket. The delete of line n-1 rides in the commit of line n, so a line
// stays on disk until the next one is committed. It echoes nothing, as the
// evspool contenders echo nothing (their Stdout is io.Discard). A failed
// write redials once and writes once more, then the line is dropped; it
// keeps nothing to resend.
type leastDurable struct {
	addr    string
	db      *bolt.DB
	dropped atomic.Uint64

	mu   sync.Mutex
	conn net.Conn
	seq  uint64 // key of the last line put, 0 before the first
	buf  []byte
}

var leastBucket = []byte("lines")

func openLeastDurable(addr, dir string, fsync bool) (*leastDurable, error) {
	o := *bolt.DefaultOptions
	o.NoSync = !fsync
	db, err := bolt.Open(filepath.Join(dir, "least.db"), 0o600, &o)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(leastBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	l := &leastDurable{addr: addr, db: db}
	l.conn, _ = dial(addr)
	return l, nil
}

// Emit commits and writes each event in turn.
func (l *leastDurable) Emit(_ context.Context, events [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		if err := l.commit(e); err != nil {
			return err
		}
		l.send(e)
	}
	return nil
}

// commit puts e under the next key and deletes the previous line's key, in
// one transaction.
func (l *leastDurable) commit(e []byte) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(leastBucket)
		if l.seq > 0 {
			if err := b.Delete(binary.BigEndian.AppendUint64(nil, l.seq)); err != nil {
				return err
			}
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, l.seq+1), e)
	})
	if err == nil {
		l.seq++
	}
	return err
}

// send writes e as one line, redialling once if the connection is gone or
// the write fails.
func (l *leastDurable) send(e []byte) {
	l.buf = append(append(l.buf[:0], e...), '\n')
	for range 2 {
		if l.conn == nil {
			if l.conn, _ = dial(l.addr); l.conn == nil {
				continue
			}
		}
		if writeAll(l.conn, l.buf) == nil {
			return
		}
		l.conn.Close()
		l.conn = nil
	}
	l.dropped.Add(1)
}

func (l *leastDurable) Drain(context.Context) int { return 0 }
func (l *leastDurable) Dropped() uint64           { return l.dropped.Load() }

func (l *leastDurable) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close()
	}
	return l.db.Close()
}
