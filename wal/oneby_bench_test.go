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
func BenchmarkOneByOne(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := map[bool]string{false: "fsync=off", true: "fsync=on"}[sync]
		b.Run("evspool/"+name, func(b *testing.B) { benchOneByOne(b, sync) })
		b.Run("leastdurable/"+name, func(b *testing.B) { benchLeastDurable(b, sync) })
	}
}

func benchOneByOne(b *testing.B, sync bool) {
	events := loadBenchEvents(b)
	w, err := Open(b.TempDir(), &Options{NoSync: !sync})
	require.NoError(b, err)
	defer w.Close()
	ctx := context.Background()
	var prev uint64
	step := func(i int) {
		last, err := w.Append(ctx, events[i%len(events)])
		if err != nil {
			b.Fatal(err)
		}
		if prev > 0 {
			if err := w.Ack(prev); err != nil {
				b.Fatal(err)
			}
		}
		prev = last
	}
	runCPU(b, step)
}

func benchLeastDurable(b *testing.B, sync bool) {
	events := loadBenchEvents(b)
	name := []byte("lines")
	db := openRawBolt(b, name, !sync)
	var seq uint64
	step := func(i int) {
		err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(name)
			if seq > 0 {
				if err := bk.Delete(binary.BigEndian.AppendUint64(nil, seq)); err != nil {
					return err
				}
			}
			return bk.Put(binary.BigEndian.AppendUint64(nil, seq+1), events[i%len(events)])
		})
		if err != nil {
			b.Fatal(err)
		}
		seq++
	}
	runCPU(b, step)
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
