package emitter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/wal"
)

// After a salvage, numbering resumes above the reservation: a hole of up to
// 65,536 numbers no event fills. Flush counts events, so the hole is neither
// reported as delivered nor waited for. (Before: "of 65,547 events, 63,548
// delivered, 1,999 expired", after 1.31 s.)
func TestFlushAfterSalvageCountsEvents(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := &rig{t: t, logs: &logSink{}}
	dir := t.TempDir()
	r.sock, r.spool = dir+"/events.sock", dir+"/spool"
	w, err := wal.Open(r.spool, &wal.Options{NoSync: true, Clock: clk})
	require.NoError(t, err)
	stale := make([][]byte, 1999)
	for i := range stale {
		stale[i] = []byte(events("stale", 1)[0])
	}
	_, err = w.Append(context.Background(), stale...)
	require.NoError(t, err)
	_, err = w.Repair(wal.ErrCorrupt)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	clk.Advance(time.Hour)

	r.open(&emitter.Options{MaxAge: time.Minute, Clock: clk})
	fresh := events("fresh", 10)
	r.emitAll(fresh)
	st := r.em.Stats()
	require.Greater(t, st.Spool.LastSeq-st.Spool.FirstSeq+1, uint64(60000), "the salvage left a hole in the numbering")
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	err = r.em.Flush(ctx)
	took := time.Since(begin)
	t.Logf("Flush after %v: %v", took, err)
	// The drainer may expire the stale events and deliver the fresh ones
	// between the receiver's start and Flush's: Flush counts what is pending
	// when it begins, at most the 2,009 events (never the hole), and accounts
	// for every one of them. When nothing was pending, Flush returns nil.
	if err != nil {
		var fe *emitter.FlushError
		require.True(t, errors.As(err, &fe), "%v", err)
		require.LessOrEqual(t, fe.Delivered, uint64(10))
		require.Zero(t, fe.Dropped)
		require.Zero(t, fe.DeadLettered)
		require.Equal(t, fe.Waited, fe.Delivered+fe.Expired, "every event Flush waited for is accounted for")
		require.LessOrEqual(t, fe.Waited, uint64(2009), "the hole is neither waited for nor reported")
	}
	require.EqualValues(t, 1999, r.em.Stats().Expired, "every stale event expired, before Flush or during it")
	require.Less(t, took, 900*time.Millisecond, "the hole is not waited for")
	requireDelivered(t, fresh, waitLines(t, rcv, len(fresh)))
}
