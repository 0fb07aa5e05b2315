package wal

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// An Ack within what the last Read returned counts what it removes from
// the Read's spans, without a transaction; the counters it leaves are the
// ones the walk of the file gives. Each step runs on two spools with the
// same events, one of which forgets its spans before each Ack.
func TestAckFromReadSpansMatchesTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := func() *WAL {
		w := openNoSync(t)
		// Commits of 1, 7 and 30 events: frames of several sizes, events of
		// several lengths.
		seq := 0
		for _, n := range []int{1, 7, 30, 1, 7, 30, 1, 7, 30} {
			batch := make([][]byte, n)
			for i := range batch {
				seq++
				batch[i] = fmt.Appendf(nil, "event %d %s", seq, make([]byte, seq%50))
			}
			_, err := w.Append(ctx, batch...)
			require.NoError(t, err)
		}
		return w
	}
	cached, walked := open(), open()
	for _, step := range []struct{ read, ack uint64 }{
		{0, 1}, {0, 5}, {0, 8}, {0, 20}, {0, 38}, {0, 60}, {0, 61}, {0, 100}, {0, 114},
	} {
		for _, w := range []*WAL{cached, walked} {
			_, err := w.Read(step.read, 40, 0)
			require.NoError(t, err)
		}
		walked.spans.forget()
		require.NoError(t, cached.Ack(step.ack))
		require.NoError(t, walked.Ack(step.ack))
		c, wk := cached.Stats(), walked.Stats()
		require.Equal(t, wk.PendingEvents, c.PendingEvents, "ack %d", step.ack)
		require.Equal(t, wk.PendingBytes, c.PendingBytes, "ack %d", step.ack)
		require.Equal(t, wk.FirstSeq, c.FirstSeq, "ack %d", step.ack)
		require.Equal(t, walked.cost.Load(), cached.cost.Load(), "ack %d", step.ack)
		e1, err := cached.Read(0, 1000, 0)
		require.NoError(t, err)
		e2, err := walked.Read(0, 1000, 0)
		require.NoError(t, err)
		require.Equal(t, len(e2), len(e1))
		if len(e1) > 0 {
			require.True(t, c.OldestTime.Equal(e1[0].Time), "ack %d: the head's stamp", step.ack)
			require.True(t, wk.OldestTime.Equal(e2[0].Time), "ack %d: the head's stamp", step.ack)
		}
	}
	// An Ack past what the Read returned falls back to the file.
	_, err := cached.Read(0, 2, 0)
	require.NoError(t, err)
	require.NoError(t, cached.Ack(cached.Stats().LastSeq))
	require.Zero(t, cached.Stats().PendingEvents)
}

// An Ack of events no Read returned (sent from what the caller committed)
// counts them from the spans of the commits that put them, without a
// transaction; the counters it leaves are the ones the walk of the file
// gives, through the end of the queue and across appends in between.
func TestAckFromCommitSpansMatchesTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cached, walked := openNoSync(t), openNoSync(t)
	seq := 0
	var acked uint64
	for _, step := range []struct {
		add int
		lag uint64 // how far behind the last sequence the Ack stays
	}{
		{1, 0}, {1, 1}, {1, 1}, {7, 3}, {30, 0}, {1, 2}, {7, 5}, {30, 29}, {1, 0}, {3, 1},
	} {
		batch := make([][]byte, step.add)
		for i := range batch {
			seq++
			batch[i] = fmt.Appendf(nil, "event %d %s", seq, make([]byte, seq%50))
		}
		var last uint64
		for _, w := range []*WAL{cached, walked} {
			l, err := w.Append(ctx, batch...)
			require.NoError(t, err)
			last = l
		}
		ack := max(last-step.lag, acked)
		walked.spans.forget()
		before := cached.stats.Acked
		require.NoError(t, cached.Ack(ack))
		require.NoError(t, walked.Ack(ack))
		require.Equal(t, before+ack-acked, cached.stats.Acked, "ack %d", ack)
		acked = ack
		c, wk := cached.Stats(), walked.Stats()
		require.Equal(t, wk.PendingEvents, c.PendingEvents, "ack %d", ack)
		require.Equal(t, wk.PendingBytes, c.PendingBytes, "ack %d", ack)
		require.Equal(t, wk.FirstSeq, c.FirstSeq, "ack %d", ack)
		require.Equal(t, walked.cost.Load(), cached.cost.Load(), "ack %d", ack)
		if c.PendingEvents > 0 {
			head, err := cached.Read(0, 1, 0)
			require.NoError(t, err)
			require.True(t, c.OldestTime.Equal(head[0].Time), "ack %d: the head's stamp", ack)
			cached.spans.forget() // the next Ack counts from the commits' spans alone
		}
	}
}

// Commits add their values to the spans only while they follow on and stay
// within maxSpanEvents: a receiver away does not grow them without bound.
func TestCommitSpansAreBounded(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	// Eight events a commit, each commit a span of its own.
	batch := slices.Repeat([][]byte{[]byte("x")}, 8)
	for range (maxSpanEvents + 10) / len(batch) {
		_, err := w.Append(context.Background(), batch...)
		require.NoError(t, err)
	}
	require.Greater(t, w.Stats().PendingEvents, uint64(maxSpanEvents))
	n := 0
	for _, s := range w.spans.spans {
		n += len(s.sizes)
	}
	require.LessOrEqual(t, n, maxSpanEvents)
	pending := w.Stats().PendingEvents
	require.NoError(t, w.Ack(5))
	require.Equal(t, pending-5, w.Stats().PendingEvents)
}

// openNoSync opens a spool without fsync in a fresh directory, closed at
// the test's end.
func openNoSync(t *testing.T) *WAL {
	t.Helper()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}
