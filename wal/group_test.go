package wal

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/clocktest"
)

// TestGroupCommitMergesCallers: 64 callers appending one event at a time in
// a loop used to split into two groups of about 32 that took turns (one
// commits while the other queues): half the batch raw bbolt gets at the
// same concurrency, and twice the fsyncs. They now make one group.
// Not parallel: how callers group depends on nothing else competing for the CPU.
func TestGroupCommitMergesCallers(t *testing.T) {
	w, err := Open(t.TempDir(), nil) // fsync on: commits take long enough to group behind
	require.NoError(t, err)
	defer w.Close()
	const callers, each = 64, 30
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := w.Append(ctx, ackEvent(g*each+i))
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := w.Stats()
	require.Equal(t, uint64(callers*each), st.PendingEvents)
	perCommit := float64(st.Appended) / float64(st.Commits)
	t.Logf("%d events in %d commits: %.1f per commit", st.Appended, st.Commits, perCommit)
	require.Greater(t, perCommit, 44.0, "callers split into groups that take turns")
}

// TestRegrouping: a commit that released a group opens the regrouping
// window, which the next commit closes as it takes its batch (its callers
// are back); one that released a lone caller opens none; and a window
// nobody closes ends by its deadline, a commit and a half after the
// release and never more than maxLinger.
func TestRegrouping(t *testing.T) {
	t.Parallel()
	f := clocktest.NewFake(time.Unix(1e9, 0))
	var g group
	g.init(f)
	_, _, ok := regrouping(&g)
	require.False(t, ok, "nothing committed yet")

	// A leads alone; B and C queue during its commit and make one batch.
	inA, releaseA := make(chan struct{}), make(chan struct{})
	var batches [][]*appendReq
	commit := func(batch []*appendReq) {
		batches = append(batches, batch)
		if len(batches) == 1 {
			close(inA)
			<-releaseA
			return
		}
		f.Advance(time.Millisecond) // B and C's commit takes 1 ms
	}
	a, b, c := newReq(nil), newReq(nil), newReq(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); g.run(a, commit) }()
	<-inA
	wg.Add(1)
	go func() { defer wg.Done(); g.run(b, commit) }()
	wg.Add(1)
	go func() { defer wg.Done(); g.run(c, commit) }()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == 2
	}, 5*time.Second, time.Millisecond)
	close(releaseA)
	wg.Wait()
	require.Len(t, batches, 2)
	require.Len(t, batches[0], 1, "A alone")
	require.Len(t, batches[1], 2, "B and C together")

	started, by, ok := regrouping(&g)
	require.True(t, ok, "a commit of two callers opens the window")
	g.mu.Lock()
	released, took := g.released, g.lastCommit
	g.mu.Unlock()
	require.Equal(t, time.Millisecond, took)
	require.Equal(t, released+took+took/2, by)
	require.LessOrEqual(t, by-released, maxLinger)
	select {
	case <-started:
		t.Fatal("the window closed before the next commit")
	default:
	}

	// D's commit takes its batch: the window closes before it commits. (A
	// pause longer than the last commit first, so that D does not gather.)
	f.Advance(2 * time.Millisecond)
	var closedAtCommit bool
	g.run(newReq(nil), func([]*appendReq) {
		select {
		case <-started:
			closedAtCommit = true
		default:
		}
	})
	require.True(t, closedAtCommit, "the next commit did not close the window")
	_, _, ok = regrouping(&g)
	require.False(t, ok, "a lone caller's commit opens no window")

	// A reader waits for an open window until the next commit starts, or
	// until the window's deadline.
	g.mu.Lock()
	g.regroup, g.regroupBy = make(chan struct{}), f.Boot()+time.Hour
	g.mu.Unlock()
	waited := make(chan struct{})
	go func() { g.awaitRegroup(); close(waited) }()
	require.Eventually(t, func() bool { return f.Timers() == 1 }, 5*time.Second, time.Millisecond, "the reader waits")
	g.run(newReq(nil), func([]*appendReq) {})
	<-waited
	g.mu.Lock()
	g.regroup, g.regroupBy = make(chan struct{}), f.Boot()+time.Millisecond
	g.mu.Unlock()
	waited = make(chan struct{})
	go func() { g.awaitRegroup(); close(waited) }()
	require.Eventually(t, func() bool { return f.Timers() == 1 }, 5*time.Second, time.Millisecond, "the reader waits")
	f.Advance(time.Millisecond)
	<-waited // by the deadline

	// Close ends an open window too.
	g.mu.Lock()
	g.regroup, g.regroupBy = make(chan struct{}), f.Boot()+time.Hour
	open := g.regroup
	g.mu.Unlock()
	g.close()
	select {
	case <-open:
	default:
		t.Fatal("close left the window open")
	}
}

// regrouping is the window awaitRegroup waits for: the channel the next
// commit closes, and its deadline; ok false when none is open.
func regrouping(g *group) (started chan struct{}, by time.Duration, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.regroup, g.regroupBy, g.regroup != nil
}

// TestAppendReqReuse: requests come back from the pool with their wake
// channel empty and nothing of the last use, after leading and after
// following alike (a stale signal would return the next caller before its
// commit).
func TestAppendReqReuse(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				_, err := w.Append(ctx, ackEvent(g*200+i))
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, uint64(1600), w.Stats().PendingEvents)
	for range 16 {
		r := newReq(nil)
		require.Zero(t, len(r.wake), "a recycled request carries a signal")
		require.Zero(t, r.last)
		require.NoError(t, r.err)
		require.False(t, r.lead || r.reserved)
		r.release()
	}
}

// TestCommitTimes: the commit times Stats gives grow with each append's
// commit, and bbolt's writes and fsyncs are a part of the whole, not more.
func TestCommitTimes(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), nil) // fsync on: the writes take measurable time
	require.NoError(t, err)
	defer w.Close()
	st0 := w.Stats()
	for i := range 5 {
		_, err := w.Append(context.Background(), ackEvent(i))
		require.NoError(t, err)
	}
	st := w.Stats()
	require.Equal(t, st0.Commits+5, st.Commits)
	require.Greater(t, st.CommitWriteTime, st0.CommitWriteTime, "five fsync'd commits wrote nothing")
	require.Greater(t, st.CommitTime, st.CommitWriteTime, "the writes took longer than the whole commit")
	require.Greater(t, st.CommitTime-st0.CommitTime, st.CommitWriteTime-st0.CommitWriteTime)
}
