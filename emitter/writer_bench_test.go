package emitter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkWriter measures events/s from Write to received, fsync on, for a
// child process's output: 64 KiB writes holding many 100-byte lines, each
// write one spool commit, lines split across write boundaries.
func BenchmarkWriter(b *testing.B) {
	rcv, em := benchRig(b, true)
	var chunk []byte
	for i := 0; len(chunk) < 64<<10; i++ {
		chunk = append(append(chunk, event100(i)[:99]...), '\n')
	}
	chunk = chunk[:64<<10] // ends mid-line: the next write completes it
	lines := 0
	w := em.Writer()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		_, err := w.Write(chunk)
		require.NoError(b, err)
	}
	require.NoError(b, w.Close())
	for i := 0; i < b.N; i++ {
		for _, c := range chunk {
			if c == '\n' {
				lines++
			}
		}
	}
	waitCount(b, rcv, lines) // the last partial line joined the next chunk's first
	b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "events/s")
}
