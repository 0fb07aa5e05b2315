package wal

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupCommitMergesCallers: 64 callers appending one event at a time in
// a loop share commits: a commit carries several callers' events, not one
// each. How many depends on the scheduler (the leader's gather makes one
// group of the two that would take turns: about 58 a commit on a quiet
// machine, 39 beside a 2-core load); that figure is the bench's concurrent
// scenario's, not this test's, which fails only when callers stop sharing.
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
	require.Greater(t, perCommit, 8.0, "callers do not share commits")
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
