package emitter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/wal"
)

// TestDropOldestLostIsMissing: under drop-oldest with a receiver slower
// than the producer, every event is either handled by the receiver or
// reported lost, never both: reported lost = emitted - distinct handled,
// exactly. What the receiver got is in order (gaps allowed where events
// were dropped), and any duplicate is part of a replay.
func TestDropOldestLostIsMissing(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{HandleTime: time.Millisecond},
		&emitter.Options{MaxSpoolBytes: 1 << 20, OnFull: wal.DropOldest})
	pad := strings.Repeat("x", 900)
	const n, per = 6000, 20
	sent := make([]string, 0, n)
	for i := 0; i < n; i += per {
		batch := make([][]byte, per)
		for j := range batch {
			ev := fmt.Sprintf("drop %06d %s", i+j, pad)
			sent = append(sent, ev)
			batch[j] = []byte(ev)
		}
		require.NoError(t, r.em.Emit(context.Background(), batch...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.em.Flush(ctx); err != nil {
		require.ErrorIs(t, err, emitter.ErrNotDelivered, "drops while it waited, nothing else")
	}
	st := r.em.Stats()
	require.Zero(t, st.Pending)
	require.NoError(t, r.em.Close(context.Background()))
	require.NoError(t, r.rcv.Close()) // records what it read and had not handled yet

	got := r.rcv.Lines()
	index := make(map[string]int, len(sent))
	for i, s := range sent {
		index[s] = i
	}
	seen := make(map[int]bool, len(got))
	dups, newest := 0, -1
	for _, line := range got {
		i, ok := index[line]
		require.True(t, ok, "a line never sent: %.40q", line)
		if seen[i] {
			dups++
			continue
		}
		require.Greater(t, i, newest, "event %d first arrived after event %d: out of order", i, newest)
		seen[i], newest = true, i
	}
	missing := uint64(n - len(seen))
	require.Positive(t, missing, "the spool was too small for the burst: some were dropped")
	require.Equal(t, missing, st.Lost(), "reported lost = missing (%d handled, %d duplicates, stats %+v)", len(seen), dups, st.LostByKind())
	require.Equal(t, missing, st.Dropped)
	require.EqualValues(t, len(seen), st.Delivered, "each handled event counted delivered once")
	t.Logf("emitted %d: %d handled, %d dropped, %d duplicates", n, len(seen), missing, dups)
}
