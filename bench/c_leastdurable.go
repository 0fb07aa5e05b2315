package main

import (
	"context"
	"encoding/binary"
	"hash/crc32"
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
//
// With metaBucket (the least-durable-metabucket yardstick) each commit also
// does what a commit of evspool's spool format does beside the events: puts
// the two numbers it moves (next sequence, removed through), checksummed,
// into a second bucket of 13 such values. Against least-durable in the same
// run, it prices that layout at a daemon's rates.
type leastDurable struct {
	addr       string
	db         *bolt.DB
	metaBucket bool
	dropped    atomic.Uint64

	mu   sync.Mutex
	conn net.Conn
	seq  uint64 // key of the last line put, 0 before the first
	buf  []byte
}

var leastBucket = []byte("lines")

// leastMeta is the second bucket of least-durable-metabucket, with the
// names of the spool format's 13 meta values (wal/meta.go); the first two
// are the ones every commit writes.
var (
	leastMeta     = []byte("meta")
	leastMetaKeys = [][]byte{[]byte("next_sequence"), []byte("removed_through"),
		[]byte("format_version"), []byte("dropped_oldest_events"), []byte("dropped_oldest_bytes"),
		[]byte("dropped_newest_events"), []byte("dropped_newest_bytes"), []byte("expired_events"),
		[]byte("expired_bytes"), []byte("unreadable_events"), []byte("refused_events"),
		[]byte("boot_id"), []byte("boot_first_seq")}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// putLeastMeta puts n under key as the spool format stores a meta value:
// 8 bytes big-endian, then the CRC-32C of key and those bytes.
func putLeastMeta(b *bolt.Bucket, key []byte, n uint64) error {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 12), n)
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, v)
	return b.Put(key, binary.BigEndian.AppendUint32(v, c))
}

func openLeastDurable(addr, dir string, fsync, metaBucket bool) (*leastDurable, error) {
	o := *bolt.DefaultOptions
	o.NoSync = !fsync
	db, err := bolt.Open(filepath.Join(dir, "least.db"), 0o600, &o)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(leastBucket); err != nil || !metaBucket {
			return err
		}
		mb, err := tx.CreateBucketIfNotExists(leastMeta)
		for _, k := range leastMetaKeys {
			if err == nil {
				err = putLeastMeta(mb, k, 0)
			}
		}
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	l := &leastDurable{addr: addr, db: db, metaBucket: metaBucket}
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
// one transaction (with metaBucket, the two numbers too).
func (l *leastDurable) commit(e []byte) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(leastBucket)
		if l.seq > 0 {
			if err := b.Delete(binary.BigEndian.AppendUint64(nil, l.seq)); err != nil {
				return err
			}
		}
		if err := b.Put(binary.BigEndian.AppendUint64(nil, l.seq+1), e); err != nil || !l.metaBucket {
			return err
		}
		mb := tx.Bucket(leastMeta)
		if err := putLeastMeta(mb, leastMetaKeys[0], l.seq+2); err != nil {
			return err
		}
		return putLeastMeta(mb, leastMetaKeys[1], l.seq)
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
