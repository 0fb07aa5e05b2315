package emitter_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// event100 returns a 100-byte PTP-shaped event carrying n.
func event100(n int) []byte {
	s := fmt.Sprintf("ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 path delay 91 n=%d ", n)
	return []byte((s + strings.Repeat("x", 100))[:100])
}

func benchRig(b *testing.B, fsync bool) (*refrecv.Receiver, *emitter.Emitter) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "s.sock")
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{CountOnly: true})
	require.NoError(b, err)
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{NoSync: !fsync, Stdout: io.Discard})
	require.NoError(b, err)
	b.Cleanup(func() {
		em.Close(context.Background())
		rcv.Close()
	})
	return rcv, em
}

func waitCount(b *testing.B, rcv *refrecv.Receiver, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(b, rcv.WaitCount(ctx, n))
}

// BenchmarkThroughput measures events/s from Emit to received, fsync on, with
// a fast receiver: one Emit per event from one goroutine, from 64 goroutines
// (group commit), and 100 events per Emit (how `evspool run` reads stdin).
func BenchmarkThroughput(b *testing.B) {
	for _, mode := range []string{"single", "concurrent64", "batch100"} {
		b.Run(mode, func(b *testing.B) {
			rcv, em := benchRig(b, true)
			ev := event100(0)
			b.SetBytes(100)
			b.ResetTimer()
			start := time.Now()
			switch mode {
			case "single":
				for i := 0; i < b.N; i++ {
					require.NoError(b, em.Emit(context.Background(), ev))
				}
			case "concurrent64":
				var wg sync.WaitGroup
				for g := 0; g < 64; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := g; i < b.N; i += 64 {
							if err := em.Emit(context.Background(), ev); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			case "batch100":
				batch := make([][]byte, 100)
				for i := range batch {
					batch[i] = ev
				}
				for i := 0; i < b.N; i += 100 {
					require.NoError(b, em.Emit(context.Background(), batch[:min(100, b.N-i)]...))
				}
			}
			waitCount(b, rcv, b.N)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkLatency emits at a steady 1,000 events/s, fsync on, and reports
// the emit-to-received latency percentiles.
func BenchmarkLatency(b *testing.B) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "s.sock")
	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(b, err)
	defer rcv.Close()
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{Stdout: io.Discard})
	require.NoError(b, err)
	defer em.Close(context.Background())

	n := max(b.N, 2000)
	sentAt := make([]time.Time, n)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		<-tick.C
		sentAt[i] = time.Now()
		require.NoError(b, em.Emit(context.Background(), []byte(strconv.Itoa(i))))
	}
	waitCount(b, rcv, n)
	b.StopTimer()
	lat := make([]time.Duration, 0, n)
	for _, l := range rcv.Received() {
		i, err := strconv.Atoi(l.Data)
		require.NoError(b, err)
		lat = append(lat, l.At.Sub(sentAt[i]))
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max_ms")
}

// BenchmarkResume restarts the receiver after a 300 ms outage with an event
// waiting, and reports the time from listening again to that event received.
func BenchmarkResume(b *testing.B) {
	rcv, em := benchRig(b, true)
	var resume []time.Duration
	for i := 0; i < b.N; i++ {
		require.NoError(b, rcv.Close())
		require.NoError(b, em.Emit(context.Background(), event100(i)))
		time.Sleep(300 * time.Millisecond)
		want := rcv.Count() + 1
		start := time.Now()
		require.NoError(b, rcv.Restart())
		waitCount(b, rcv, want)
		resume = append(resume, time.Since(start))
	}
	slices.Sort(resume)
	b.ReportMetric(ms(resume[len(resume)/2]), "resume_p50_ms")
	b.ReportMetric(ms(resume[len(resume)-1]), "resume_max_ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
