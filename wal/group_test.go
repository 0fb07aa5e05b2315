package wal

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
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
