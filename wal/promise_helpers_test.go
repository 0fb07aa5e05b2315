package wal_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
	"github.com/evspool/evspool/wal/clock"
)

// The helpers of the promise tests. Their names carry a "sp" (spool) prefix
// so they cannot collide with helpers of the other test files of the package.

// spOpen opens a spool and closes it when the test ends.
func spOpen(t testing.TB, dir string, o *wal.Options) *wal.WAL {
	t.Helper()
	w, err := wal.Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// spEvent returns the content of the event with number n: recognisable, of
// the given size (at least the length of its label), different for each n.
func spEvent(n uint64, size int) []byte {
	label := fmt.Sprintf("event-%d-", n)
	b := make([]byte, max(size, len(label)))
	copy(b, label)
	for i := len(label); i < len(b); i++ {
		b[i] = byte('a' + (n+uint64(i))%26)
	}
	return b
}

// spReadAll returns every pending entry.
func spReadAll(t testing.TB, w *wal.WAL) []wal.Entry {
	t.Helper()
	es, err := w.Read(0, 0, 0)
	require.NoError(t, err)
	return es
}

// spSeqs returns the sequence numbers of entries.
func spSeqs(es []wal.Entry) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// spRange returns the sequence numbers from..to inclusive.
func spRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// spDiskUsage returns the spool file's size and the bytes it occupies on
// disk (st_blocks * 512).
func spDiskUsage(t testing.TB, path string) (size, blocks int64) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	return fi.Size(), st.Blocks * 512
}

// spClock is a settable wall clock; its boot clock is the system's.
type spClock struct{ ns atomic.Int64 }

func newSpClock(start time.Time) *spClock {
	c := &spClock{}
	c.ns.Store(start.UnixNano())
	return c
}

func (c *spClock) Now() time.Time                  { return time.Unix(0, c.ns.Load()) }
func (c *spClock) Advance(d time.Duration)         { c.ns.Add(int64(d)) }
func (c *spClock) Set(t time.Time)                 { c.ns.Store(t.UnixNano()) }
func (c *spClock) Opts(o wal.Options) *wal.Options { o.Clock = c; return &o }
func (c *spClock) Boot() time.Duration             { return clock.System().Boot() }
func (c *spClock) BootID() string                  { return clock.System().BootID() }
func (c *spClock) NewTimer(d time.Duration) clock.Timer {
	return clock.System().NewTimer(d)
}
