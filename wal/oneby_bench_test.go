package wal

import (
	"context"
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkOneByOne is node-cost's hot path without the socket: one event
// per Append, the previous one acknowledged after it, as an emitter at a
// daemon's rate does (one event per Emit, read before the next). leastdurable
// is the bench's yardstick on plain bbolt (default options): one Update per
// event that puts it and deletes the previous one. user-µs/op and sys-µs/op
// are the process's CPU (getrusage) per event, so that the work done in
// user space, which fsync's cost hides in ns/op, compares side by side.
// fsync=off drops bbolt's two fdatasyncs a commit from both.
//
// Two more yardsticks price the spool's layout on the same plain bbolt:
// leastdurable+metabucket adds this format's meta bucket (meta.fields
// beside the events bucket) and writes the two a commit moves, as every
// commit of the spool does; leastdurable+statekey keeps the meta values
// in one value under one key of the events bucket instead, after every
// event key, so a commit rewrites it in the leaf it writes anyway. The
// second is a layout no format here has: what it saves over the first is
// what a format change could save. evspool+witness adds the emitter's
// witness kept with each acknowledgement (wal.StoreLater).
func BenchmarkOneByOne(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := map[bool]string{false: "fsync=off", true: "fsync=on"}[sync]
		b.Run("evspool/"+name, func(b *testing.B) { benchOneByOne(b, sync, false) })
		b.Run("evspool+witness/"+name, func(b *testing.B) { benchOneByOne(b, sync, true) })
		b.Run("leastdurable/"+name, func(b *testing.B) { benchLeastDurable(b, sync, nil) })
		b.Run("leastdurable+metabucket/"+name, func(b *testing.B) { benchLeastDurable(b, sync, metaBucketLayout) })
		b.Run("leastdurable+statekey/"+name, func(b *testing.B) { benchLeastDurable(b, sync, stateKeyLayout) })
	}
}

// benchOneByOne with witness keeps, before each Ack, the event acked as a
// StoreLater value, as the emitter keeps its witness (ledger.KeepWitness).
func benchOneByOne(b *testing.B, sync, witness bool) {
	events := loadBenchEvents(b)
	w, err := Open(b.TempDir(), &Options{NoSync: !sync})
	require.NoError(b, err)
	defer w.Close()
	ctx := context.Background()
	var prev uint64
	var prevEvent []byte
	step := func(i int) {
		last, err := w.Append(ctx, events[i%len(events)])
		if err != nil {
			b.Fatal(err)
		}
		if prev > 0 {
			if witness {
				v := append(make([]byte, 24, 24+len(prevEvent)), prevEvent...) // a strike record's size
				if err := w.StoreLater("poison_strikes", v); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Ack(prev); err != nil {
				b.Fatal(err)
			}
		}
		prev, prevEvent = last, events[i%len(events)]
	}
	runCPU(b, step)
}

// layout writes a yardstick's meta values in the commit of line seq; nil
// writes none.
type layout func(tx *bolt.Tx, lines *bolt.Bucket, seq uint64) error

func benchLeastDurable(b *testing.B, sync bool, lay layout) {
	events := loadBenchEvents(b)
	name := []byte("lines")
	db := openRawBolt(b, name, !sync)
	if lay != nil {
		require.NoError(b, db.Update(func(tx *bolt.Tx) error {
			mb, err := tx.CreateBucket(metaBucket)
			if err != nil {
				return err
			}
			var m meta
			if err := m.store(mb); err != nil {
				return err
			}
			return lay(tx, tx.Bucket(name), 0)
		}))
	}
	var seq uint64
	step := func(i int) {
		err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(name)
			if seq > 0 {
				if err := bk.Delete(binary.BigEndian.AppendUint64(nil, seq)); err != nil {
					return err
				}
			}
			if err := bk.Put(binary.BigEndian.AppendUint64(nil, seq+1), events[i%len(events)]); err != nil {
				return err
			}
			if lay != nil {
				return lay(tx, bk, seq+1)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		seq++
	}
	runCPU(b, step)
}

// metaBucketLayout is this format's: the two values a commit moves, put in
// the meta bucket by the spool's own storeChanged (the others unchanged).
func metaBucketLayout(tx *bolt.Tx, _ *bolt.Bucket, seq uint64) error {
	m := meta{nextSeq: seq + 1, removedSeq: seq}
	return m.storeChanged(tx.Bucket(metaBucket), &m)
}

// stateKey sorts after every 8-byte event key.
var stateKey = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// stateKeyLayout puts every meta value, packed and checksummed, under
// stateKey in the events bucket.
func stateKeyLayout(_ *bolt.Tx, lines *bolt.Bucket, seq uint64) error {
	m := meta{nextSeq: seq + 1, removedSeq: seq}
	fields := m.fields()
	v := make([]byte, 8*len(fields)+metaSumSize)
	for i, f := range fields {
		binary.BigEndian.PutUint64(v[8*i:], *f.val)
	}
	return lines.Put(stateKey, sealMeta(stateKey, v))
}

// runCPU runs step 100 times to warm up, then b.N times, and reports the
// process's user and system CPU per op beside the wall time.
func runCPU(b *testing.B, step func(i int)) {
	for i := range 100 {
		step(i)
	}
	b.ReportAllocs()
	b.SetBytes(benchEventSize)
	u0, s0 := rusage(b)
	b.ResetTimer()
	for i := range b.N {
		step(i)
	}
	b.StopTimer()
	u1, s1 := rusage(b)
	b.ReportMetric(float64((u1-u0).Microseconds())/float64(b.N), "user-µs/op")
	b.ReportMetric(float64((s1-s0).Microseconds())/float64(b.N), "sys-µs/op")
}

func rusage(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
