package wal_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/wal"
)

// TestAckStaysUnderCap: an Ack deletes entries, which rewrites leaves, branch
// pages and the freelist into new pages, and bbolt cannot reuse the pages the
// same commit freed: on a full spool of mixed, partly large events (scattered
// free pages), the Ack itself used to grow the file a growth step past
// MaxBytes (1.125x here). After every Ack the file must be within the cap.
func TestAckStaysUnderCap(t *testing.T) {
	t.Parallel()
	const maxBytes = 1 << 20
	var worst int64
	for seed := range testmode.Pick[uint64](3, 6) { // make torture: 6 seeds
		worst = max(worst, ackCapRun(t, seed, maxBytes))
	}
	t.Logf("largest file after an Ack: %d bytes (%.3fx the cap)", worst, float64(worst)/maxBytes)
	require.LessOrEqual(t, worst, int64(maxBytes), "an Ack left the file past the cap")
}

// ackCapRun appends mixed events to a full DropOldest spool, acknowledging
// the oldest one or few now and then; it returns the largest file size seen
// right after an Ack.
func ackCapRun(t *testing.T, seed uint64, maxBytes int64) int64 {
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: maxBytes})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 4))
	var worst int64
	for round := 0; round < 400; round++ {
		size := 100 + rng.IntN(6000)
		if rng.IntN(4) == 0 {
			size = 9000 + rng.IntN(30000)
		}
		last, err := w.Append(ctx, spEvent(uint64(round), size))
		require.NoError(t, err)
		if rng.IntN(10) == 0 {
			upTo := min(w.Stats().FirstSeq+uint64(rng.IntN(3)), last)
			require.NoError(t, w.Ack(upTo))
			worst = max(worst, w.Stats().FileBytes)
		}
	}
	require.NoError(t, w.Close())
	return worst
}
