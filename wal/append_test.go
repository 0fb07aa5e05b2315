package wal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/wal"
)

func TestAppendConsecutive(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	ctx := context.Background()
	require.Equal(t, uint64(0), w.LastSeq())

	last, err := w.Append(ctx, spEvent(1, 10))
	require.NoError(t, err)
	require.Equal(t, uint64(1), last)
	last, err = w.Append(ctx, spEvent(2, 10), spEvent(3, 0), spEvent(4, 1000))
	require.NoError(t, err)
	require.Equal(t, uint64(4), last, "a batch gets consecutive numbers; the last is returned")
	last, err = w.Append(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(0), last, "an empty Append does nothing")
	require.Equal(t, uint64(4), w.LastSeq())

	es := spReadAll(t, w)
	require.Equal(t, spRange(1, 4), spSeqs(es))
	for _, e := range es {
		require.Equal(t, spEvent(e.Seq, len(e.Data)), e.Data)
	}
}

func TestAppendCopiesEvents(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	ev := []byte("original")
	_, err := w.Append(context.Background(), ev)
	require.NoError(t, err)
	copy(ev, "CHANGED!")
	es := spReadAll(t, w)
	require.Equal(t, "original", string(es[0].Data))
	es[0].Data[0] = 'X'
	require.Equal(t, "original", string(spReadAll(t, w)[0].Data), "Read must hand out copies")
}

func TestAppendPassesBytesThrough(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	events := [][]byte{{}, {0}, []byte("\r\x00\xff\xfe invalid utf-8"), make([]byte, 64<<10)}
	_, err := w.Append(context.Background(), events...)
	require.NoError(t, err)
	es := spReadAll(t, w)
	require.Len(t, es, len(events))
	for i, e := range es {
		require.Equal(t, len(events[i]), len(e.Data))
		require.Equal(t, string(events[i]), string(e.Data))
	}
}

// TestSeqNeverGoesBack checks that a new event always gets a number above
// every number handed out before, whatever happened to the spool between.
func TestSeqNeverGoesBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// between runs after 10 events were appended; it may reopen the spool.
		between func(t *testing.T, w *wal.WAL, dir string) *wal.WAL
	}{
		{"restart", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Close())
			return spOpen(t, dir, &wal.Options{NoSync: true})
		}},
		{"all acked then restart", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(10))
			require.Equal(t, uint64(0), w.Len())
			require.NoError(t, w.Close())
			return spOpen(t, dir, &wal.Options{NoSync: true})
		}},
		{"ack beyond last then restart", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(1000))
			require.NoError(t, w.Close())
			return spOpen(t, dir, &wal.Options{NoSync: true})
		}},
		{"compaction", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(10))
			require.NoError(t, w.Compact())
			return w
		}},
		{"compaction then restart", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(10))
			require.NoError(t, w.Compact())
			require.NoError(t, w.Close())
			return spOpen(t, dir, &wal.Options{NoSync: true})
		}},
		{"repair", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(10))
			r, err := w.Repair(fmt.Errorf("test: forced repair"))
			require.NoError(t, err)
			require.Contains(t, r.CorruptPath, "corrupt")
			return w
		}},
		{"spool file deleted", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(5))
			require.NoError(t, w.Close())
			require.NoError(t, os.Remove(filepath.Join(dir, "spool.db")))
			return spOpen(t, dir, &wal.Options{NoSync: true})
		}},
		{"salvage of an emptied file", func(t *testing.T, w *wal.WAL, dir string) *wal.WAL {
			require.NoError(t, w.Ack(5))
			require.NoError(t, w.Close())
			spCorrupt(t, filepath.Join(dir, "spool.db"), func(b []byte) []byte { return b[:0] })
			w = spOpen(t, dir, &wal.Options{NoSync: true})
			require.NotNil(t, w.Salvaged())
			return w
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := spOpen(t, dir, &wal.Options{NoSync: true})
			for i := uint64(1); i <= 10; i++ {
				_, err := w.Append(context.Background(), spEvent(i, 50))
				require.NoError(t, err)
			}
			w = tc.between(t, w, dir)
			require.GreaterOrEqual(t, w.LastSeq(), uint64(10))
			last, err := w.Append(context.Background(), spEvent(11, 50))
			require.NoError(t, err)
			require.Greater(t, last, uint64(10))
			require.Equal(t, last, w.LastSeq())
			es := spReadAll(t, w)
			require.NotEmpty(t, es)
			require.Equal(t, last, es[len(es)-1].Seq)
		})
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	// Events 1..10 of 100 bytes each, then event 11 of 5000 bytes.
	for i := uint64(1); i <= 10; i++ {
		_, err := w.Append(context.Background(), spEvent(i, 100))
		require.NoError(t, err)
	}
	_, err := w.Append(context.Background(), spEvent(11, 5000))
	require.NoError(t, err)

	cases := []struct {
		name      string
		from      uint64
		maxEvents int
		maxBytes  int
		want      []uint64
	}{
		{"everything", 0, 0, 0, spRange(1, 11)},
		{"from 1", 1, 0, 0, spRange(1, 11)},
		{"from the middle", 5, 0, 0, spRange(5, 11)},
		{"from the last", 11, 0, 0, []uint64{11}},
		{"from past the end", 12, 0, 0, nil},
		{"from far past the end", 1 << 40, 10, 0, nil},
		{"count", 1, 3, 0, spRange(1, 3)},
		{"count from the middle", 4, 2, 0, []uint64{4, 5}},
		{"count larger than what is there", 9, 100, 0, spRange(9, 11)},
		{"bytes exact", 1, 0, 300, spRange(1, 3)},
		{"bytes one short", 1, 0, 299, spRange(1, 2)},
		{"bytes under one entry gives one", 1, 0, 1, []uint64{1}},
		{"entry larger than maxBytes alone", 11, 0, 100, []uint64{11}},
		{"large entry not added past maxBytes", 9, 0, 1000, []uint64{9, 10}},
		{"count and bytes: count binds", 1, 2, 1000, spRange(1, 2)},
		{"count and bytes: bytes bind", 1, 8, 450, spRange(1, 4)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := w.Read(tc.from, tc.maxEvents, tc.maxBytes)
			require.NoError(t, err)
			require.Equal(t, tc.want, spSeqs(es))
			for _, e := range es {
				size := 100
				if e.Seq == 11 {
					size = 5000
				}
				require.Equal(t, spEvent(e.Seq, size), e.Data)
			}
		})
	}
	require.Equal(t, uint64(11), w.Len(), "Read must not remove anything")
}

func TestAck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name     string
		acks     []uint64
		wantSeqs []uint64
	}{
		{"none", nil, spRange(1, 10)},
		{"up to a middle seq", []uint64{4}, spRange(5, 10)},
		{"first only", []uint64{1}, spRange(2, 10)},
		{"zero is a no-op", []uint64{0}, spRange(1, 10)},
		{"everything", []uint64{10}, nil},
		{"beyond the last is clamped", []uint64{1 << 40}, nil},
		{"again is a no-op", []uint64{6, 6, 3, 6}, spRange(7, 10)},
		{"going back is a no-op", []uint64{8, 2}, spRange(9, 10)},
		{"in steps", []uint64{2, 4, 9}, []uint64{10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := spOpen(t, dir, &wal.Options{NoSync: true})
			for i := uint64(1); i <= 10; i++ {
				_, err := w.Append(ctx, spEvent(i, 20))
				require.NoError(t, err)
			}
			for _, a := range tc.acks {
				require.NoError(t, w.Ack(a))
			}
			check := func(w *wal.WAL) {
				t.Helper()
				es := spReadAll(t, w)
				var want []uint64
				if tc.wantSeqs != nil {
					want = tc.wantSeqs
				}
				require.Equal(t, want, spSeqs(es))
				require.Equal(t, uint64(len(want)), w.Len())
				if len(want) > 0 {
					require.Equal(t, want[0], w.FirstSeq())
				} else {
					require.Equal(t, uint64(0), w.FirstSeq())
				}
				require.Equal(t, uint64(10), w.LastSeq())
				require.Equal(t, uint64(len(want)*20), w.Stats().PendingBytes)
			}
			check(w)
			require.NoError(t, w.Close())
			check(spOpen(t, dir, &wal.Options{NoSync: true}))
		})
	}
}

// TestAckBeyondLastThenAppend: an Ack beyond the last sequence number must
// not remove events appended afterwards.
func TestAckBeyondLastThenAppend(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	_, err := w.Append(context.Background(), spEvent(1, 10), spEvent(2, 10))
	require.NoError(t, err)
	require.NoError(t, w.Ack(100))
	last, err := w.Append(context.Background(), spEvent(3, 10))
	require.NoError(t, err)
	require.Equal(t, uint64(3), last)
	require.Equal(t, []uint64{3}, spSeqs(spReadAll(t, w)))
}

func TestStatsAndClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := newSpClock(start)
	dir := t.TempDir()
	opts := clock.Opts(wal.Options{NoSync: true, MaxBytes: 8 << 20})
	w := spOpen(t, dir, opts)
	ctx := context.Background()

	s := w.Stats()
	require.Equal(t, uint64(0), s.PendingEvents)
	require.True(t, s.OldestTime.IsZero())
	require.Equal(t, int64(8<<20), s.MaxBytes)
	require.Positive(t, s.FileBytes)

	_, err := w.Append(ctx, spEvent(1, 100), spEvent(2, 200))
	require.NoError(t, err)
	clock.Advance(3 * time.Second)
	_, err = w.Append(ctx, spEvent(3, 300))
	require.NoError(t, err)
	clock.Advance(2 * time.Second)

	s = w.Stats()
	require.Equal(t, uint64(3), s.PendingEvents)
	require.Equal(t, uint64(600), s.PendingBytes)
	require.Equal(t, uint64(1), s.FirstSeq)
	require.Equal(t, uint64(3), s.LastSeq)
	require.True(t, s.OldestTime.Equal(start), "oldest time %v", s.OldestTime)
	require.Equal(t, uint64(3), s.Appended)
	require.Equal(t, uint64(2), s.Commits)
	require.Equal(t, uint64(0), s.Acked)
	require.Equal(t, uint64(0), s.CommitErrors)

	es := spReadAll(t, w)
	require.True(t, es[0].Time.Equal(start))
	require.True(t, es[2].Time.Equal(start.Add(3*time.Second)))

	require.NoError(t, w.Ack(2))
	s = w.Stats()
	require.Equal(t, uint64(1), s.PendingEvents)
	require.Equal(t, uint64(300), s.PendingBytes)
	require.Equal(t, uint64(3), s.FirstSeq)
	require.Equal(t, uint64(2), s.Acked)
	require.True(t, s.OldestTime.Equal(start.Add(3*time.Second)))

	// Pending figures come from the file; process counters restart at zero.
	require.NoError(t, w.Close())
	clock.Advance(time.Minute)
	w = spOpen(t, dir, opts)
	s = w.Stats()
	require.Equal(t, uint64(1), s.PendingEvents)
	require.Equal(t, uint64(300), s.PendingBytes)
	require.Equal(t, uint64(3), s.FirstSeq)
	require.Equal(t, uint64(3), s.LastSeq)
	require.True(t, s.OldestTime.Equal(start.Add(3*time.Second)))
	require.Equal(t, uint64(0), s.Appended)
	require.Equal(t, uint64(0), s.Acked)

	require.NoError(t, w.Ack(3))
	require.True(t, w.Stats().OldestTime.IsZero())
	require.Equal(t, uint64(3), w.Stats().LastSeq, "LastSeq stays when the spool empties")
}

// TestDropCountersSurviveRestart fills a 1 MiB spool with 2 MiB of events
// under each dropping policy; the counts of what was dropped are exact and
// survive a restart.
func TestDropCountersSurviveRestart(t *testing.T) {
	t.Parallel()
	const size, n = 1000, 1500 // half again what the cap holds
	cases := []struct {
		policy wal.Policy
	}{{wal.DropOldest}, {wal.DropNewest}}
	for _, tc := range cases {
		t.Run(tc.policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: tc.policy}
			w := spOpen(t, dir, opts)
			var refused uint64
			for i := uint64(1); i <= n; i++ {
				_, err := w.Append(context.Background(), spEvent(i, size))
				if err != nil {
					require.ErrorIs(t, err, wal.ErrFull)
					require.Equal(t, wal.DropNewest, tc.policy)
					refused++
				}
			}
			s := w.Stats()
			stored := s.PendingEvents
			require.Equal(t, uint64(n), s.PendingEvents+s.DroppedOldest.Events+s.DroppedNewest.Events)
			switch tc.policy {
			case wal.DropOldest:
				require.Positive(t, s.DroppedOldest.Events)
				require.Zero(t, s.DroppedNewest.Events)
				require.Equal(t, s.DroppedOldest.Events*size, s.DroppedOldest.Bytes)
				// The newest survive, contiguous.
				es := spReadAll(t, w)
				require.Equal(t, spRange(n-stored+1, n), spSeqs(es))
			case wal.DropNewest:
				require.Equal(t, refused, s.DroppedNewest.Events)
				require.Zero(t, s.DroppedOldest.Events)
				require.Equal(t, refused*size, s.DroppedNewest.Bytes)
				es := spReadAll(t, w)
				require.Equal(t, spRange(1, stored), spSeqs(es))
			}
			require.NoError(t, w.Close())

			w = spOpen(t, dir, opts)
			s2 := w.Stats()
			require.Equal(t, s.DroppedOldest, s2.DroppedOldest)
			require.Equal(t, s.DroppedNewest, s2.DroppedNewest)
			require.Equal(t, s.PendingEvents, s2.PendingEvents)
			require.NoError(t, w.Compact())
			require.Equal(t, s.DroppedOldest, w.Stats().DroppedOldest, "compaction keeps the counters")
			require.Equal(t, s.DroppedNewest, w.Stats().DroppedNewest, "compaction keeps the counters")
		})
	}
}

// spFillBlock fills a Block spool until an Append of one event with a
// cancelled context is refused, and returns the last sequence number stored.
// The first event is a value of its own (acknowledging it frees one event's
// room); the bulk goes in batches, a commit each, and single events fill
// what is left.
func spFillBlock(t *testing.T, w *wal.WAL, size int) uint64 {
	t.Helper()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var last uint64
	fill := func(n int) error {
		batch := make([][]byte, n)
		for i := range batch {
			batch[i] = spEvent(last+1+uint64(i), size)
		}
		seq, err := w.Append(cancelled, batch...)
		if err != nil {
			require.ErrorIs(t, err, wal.ErrFull)
			require.ErrorIs(t, err, context.Canceled)
			return err
		}
		last = seq
		return nil
	}
	require.NoError(t, fill(1))
	for fill(64) == nil {
	}
	for fill(1) == nil {
	}
	return last
}

type spResult struct {
	seq uint64
	err error
}

func spAppendAsync(w *wal.WAL, ctx context.Context, ev []byte) <-chan spResult {
	ch := make(chan spResult, 1)
	go func() {
		seq, err := w.Append(ctx, ev)
		ch <- spResult{seq, err}
	}()
	return ch
}

func TestBlockWaitsForAck(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: wal.Block})
	last := spFillBlock(t, w, 100)
	pending := w.Len()

	done := spAppendAsync(w, context.Background(), spEvent(last+1, 100))
	require.Never(t, func() bool { return len(done) > 0 }, 100*time.Millisecond, 5*time.Millisecond,
		"Append must wait while the spool is full")
	require.Equal(t, pending, w.Len())

	// Acknowledging one event of the same size frees just enough.
	require.NoError(t, w.Ack(w.FirstSeq()))
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, last+1, r.seq)
	case <-time.After(10 * time.Second):
		t.Fatal("Append still waiting after Ack freed space")
	}
	s := w.Stats()
	require.Zero(t, s.DroppedOldest.Events, "Block never drops")
	require.Zero(t, s.DroppedNewest.Events, "Block never drops")
	require.Equal(t, spRange(2, last+1), spSeqs(spReadAll(t, w)))
}

func TestBlockContextEnds(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: wal.Block})
	last := spFillBlock(t, w, 1000)
	// The clock starts before the context's: the deadline is 50 ms after a
	// moment before start, so the elapsed time cannot come out shorter.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := w.Append(ctx, spEvent(last+1, 1000))
	require.ErrorIs(t, err, wal.ErrFull)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	require.Equal(t, last, w.LastSeq())
	require.Zero(t, w.Stats().DroppedNewest.Events, "a timed-out Block append is not a drop")
}

func TestBlockClose(t *testing.T) {
	t.Parallel()
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: wal.Block})
	require.NoError(t, err)
	last := spFillBlock(t, w, 1000)
	var results []<-chan spResult
	for i := uint64(1); i <= 3; i++ {
		results = append(results, spAppendAsync(w, context.Background(), spEvent(last+i, 1000)))
	}
	require.Never(t, func() bool {
		for _, r := range results {
			if len(r) > 0 {
				return true
			}
		}
		return false
	}, 100*time.Millisecond, 5*time.Millisecond)
	require.NoError(t, w.Close())
	for _, ch := range results {
		select {
		case r := <-ch:
			require.ErrorIs(t, r.err, wal.ErrClosed)
		case <-time.After(10 * time.Second):
			t.Fatal("Append still waiting after Close")
		}
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	for _, policy := range []wal.Policy{wal.DropOldest, wal.DropNewest, wal.Block} {
		t.Run(policy.String(), func(t *testing.T) {
			w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: policy})
			_, err := w.Append(context.Background(), spEvent(1, 10))
			require.NoError(t, err)

			_, err = w.Append(context.Background(), make([]byte, 1<<20))
			require.ErrorIs(t, err, wal.ErrTooLarge)
			require.NotErrorIs(t, err, wal.ErrFull)

			// Together too large, though each one would fit.
			batch := make([][]byte, 20)
			for i := range batch {
				batch[i] = make([]byte, 64<<10)
			}
			_, err = w.Append(context.Background(), batch...)
			require.ErrorIs(t, err, wal.ErrTooLarge)
			require.ErrorContains(t, err, "20 events committed together", "a batch is told to be smaller")

			s := w.Stats()
			require.Equal(t, uint64(1), s.PendingEvents, "nothing was dropped for it")
			require.Zero(t, s.DroppedOldest.Events)
			require.Zero(t, s.DroppedNewest.Events)
			require.Equal(t, uint64(1), s.LastSeq, "no sequence number was used")
		})
	}
}

// TestGroupCommit: 64 goroutines appending at once share commits, and every
// one gets its own consecutive sequence number.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	const writers, each = 64, 25
	w := spOpen(t, t.TempDir(), nil) // fsync on: the cost group commit saves
	start := make(chan struct{})
	type got struct {
		seq  uint64
		data []byte
	}
	results := make(chan got, writers*each)
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				ev := []byte(fmt.Sprintf("writer %d event %d", g, i))
				seq, err := w.Append(context.Background(), ev)
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				results <- got{seq, ev}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(results)

	bySeq := map[uint64][]byte{}
	var seqs []uint64
	for r := range results {
		require.NotContains(t, bySeq, r.seq, "sequence %d handed out twice", r.seq)
		bySeq[r.seq] = r.data
		seqs = append(seqs, r.seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	require.Equal(t, spRange(1, writers*each), seqs)

	s := w.Stats()
	require.Equal(t, uint64(writers*each), s.Appended)
	require.Less(t, s.Commits, s.Appended/4, "commits %d for %d appends", s.Commits, s.Appended)
	t.Logf("%d appends in %d commits", s.Appended, s.Commits)

	es := spReadAll(t, w)
	require.Len(t, es, writers*each)
	for _, e := range es {
		require.Equal(t, string(bySeq[e.Seq]), string(e.Data))
	}
}

// TestReclaimOnline drains a backlog of several MiB while another goroutine
// keeps appending: the file shrinks back without a restart, and none of the
// concurrent appends is lost or reordered.
func TestReclaimOnline(t *testing.T) {
	t.Parallel()
	const backlog, size, concurrent = 8000, 1024, 2000
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	ctx := context.Background()
	batch := make([][]byte, 0, 100)
	for i := uint64(1); i <= backlog; i++ {
		batch = append(batch, spEvent(i, size))
		if len(batch) == cap(batch) {
			_, err := w.Append(ctx, batch...)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
	full := w.Stats().FileBytes
	require.Greater(t, full, int64(8<<20))

	appended := make(chan uint64, concurrent)
	go func() {
		defer close(appended)
		for i := 0; i < concurrent; i++ {
			seq, err := w.Append(ctx, spEvent(uint64(backlog+1+i), 100))
			if err != nil {
				t.Errorf("concurrent append: %v", err)
				return
			}
			appended <- seq
		}
	}()
	for acked := uint64(0); acked < backlog; {
		es, err := w.Read(acked+1, 500, 0)
		require.NoError(t, err)
		require.NotEmpty(t, es)
		upTo := min(es[len(es)-1].Seq, backlog)
		require.NoError(t, w.Ack(upTo))
		acked = upTo
	}
	var got []uint64
	for seq := range appended {
		got = append(got, seq)
	}
	require.Len(t, got, concurrent)
	require.Equal(t, spRange(backlog+1, backlog+concurrent), got)
	es := spReadAll(t, w)
	require.Equal(t, got, spSeqs(es), "every concurrent append is there, in order")
	for _, e := range es {
		require.Equal(t, spEvent(e.Seq, 100), e.Data)
	}
	require.NoError(t, w.Ack(w.LastSeq()))

	s := w.Stats()
	require.Positive(t, s.Compactions)
	require.Less(t, s.FileBytes, int64(1<<20), "file %d bytes after draining (was %d)", s.FileBytes, full)
	size2, blocks := spDiskUsage(t, w.Path())
	require.Less(t, size2, int64(1<<20))
	require.Less(t, blocks, int64(1<<20))
	t.Logf("file %d bytes full, %d bytes (%d on disk) drained; %d compactions", full, size2, blocks, s.Compactions)
}

// TestBlockConcurrent: producers under Block and an acker draining behind
// them make progress together; nothing is dropped, lost or reordered. A
// deadlock between waiting producers and Ack, or a wake-up lost between a
// commit and a waiter, stops it.
func TestBlockConcurrent(t *testing.T) {
	t.Parallel()
	const producers = 8
	each := testmode.Pick[uint64](150, 300) // batches a producer appends
	// Not spOpen: after a deadlock, Close would hang the test binary too.
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true, MaxBytes: 1 << 20, OnFull: wal.Block})
	require.NoError(t, err)
	appended := make(chan struct{}, 1)
	errs := make(chan error, producers+1)
	for p := 0; p < producers; p++ {
		go func() {
			for range each {
				// Batches of 10 events of 1 KiB: the spool holds about 70.
				batch := make([][]byte, 10)
				for j := range batch {
					batch[j] = []byte(fmt.Sprintf("%04d %s", p, make([]byte, 1000)))
				}
				if _, err := w.Append(context.Background(), batch...); err != nil {
					errs <- err
					return
				}
				select {
				case appended <- struct{}{}:
				default:
				}
			}
			errs <- nil
		}()
	}
	var progress atomic.Uint64 // the acker's acknowledgements
	go func() {
		var acked uint64
		for acked < producers*each*10 {
			es, err := w.Read(acked+1, 300, 0)
			if err != nil {
				errs <- err
				return
			}
			if len(es) == 0 {
				<-appended
				continue
			}
			for _, e := range es {
				if e.Seq != acked+1 {
					errs <- fmt.Errorf("acker expected %d, read %d", acked+1, e.Seq)
					return
				}
				acked = e.Seq
			}
			if err := w.Ack(acked); err != nil {
				errs <- err
				return
			}
			progress.Store(acked)
		}
		errs <- nil
	}()
	// Stuck is no acknowledgement for 15 s: a loaded machine under -race
	// can take longer than that for the whole run, never for one step.
	look := time.NewTicker(15 * time.Second)
	defer look.Stop()
	last := uint64(0)
	for i := 0; i < producers+1; {
		select {
		case err := <-errs:
			require.NoError(t, err)
			i++
		case <-look.C:
			now := progress.Load()
			if now == last && now < producers*each*10 {
				t.Fatalf("producers and acker stuck at %d acknowledged: deadlock or lost wake-up", now)
			}
			last = now
		}
	}
	s := w.Stats()
	require.Equal(t, uint64(producers*each*10), s.LastSeq)
	require.Zero(t, s.PendingEvents)
	require.Zero(t, s.DroppedOldest.Events)
	require.Zero(t, s.DroppedNewest.Events)
	require.NoError(t, w.Close())
}
