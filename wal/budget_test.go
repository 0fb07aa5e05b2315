package wal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEntryCost checks the cost model against bbolt's packing of leaf pages:
// k entries of the same size share a page, a larger one takes whole pages.
func TestEntryCost(t *testing.T) {
	t.Parallel()
	if costPage != 4096 {
		t.Skipf("figures below are for 4 KiB pages, this system has %d", costPage)
	}
	cases := []struct {
		name string
		size int
		want int64
	}{
		{"empty", 0, 45},            // 92 per page
		{"100 bytes", 100, 147},     // 28 per page
		{"1000 bytes", 1000, 1366},  // 3 per page
		{"half a page", 1996, 2048}, // 2 per page
		{"just over", 1997, 4096},   // 1 per page
		{"a page", 4036, 4096},      // 4036+44 = 4080: exactly one page
		{"just over a page", 4037, 8192},
		{"64 KiB", 64 << 10, 17 * 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, entryCost(tc.size))
			require.GreaterOrEqual(t, entryCost(tc.size), int64(tc.size)+entryOverhead)
		})
	}
}

// TestBudgetRestoredWhenDrained: a budget enforceCap lowered (entries that
// packed badly) comes back once the spool is empty, so later events get the
// whole cap again without a restart.
func TestBudgetRestoredWhenDrained(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true, MaxBytes: 1 << 20, OnFull: DropNewest})
	require.NoError(t, err)
	defer w.Close()
	initial := w.budget.Load()
	require.Equal(t, initialBudget(1<<20), initial)

	last, err := w.Append(context.Background(), make([]byte, 1000), make([]byte, 1000))
	require.NoError(t, err)
	w.wmu.Lock()
	w.budget.Store(w.opts.MaxBytes / 2) // as enforceCap leaves it at worst
	w.wmu.Unlock()

	require.NoError(t, w.Ack(last-1))
	require.Equal(t, w.opts.MaxBytes/2, w.budget.Load(), "not drained yet")
	require.NoError(t, w.Ack(last))
	require.Equal(t, initial, w.budget.Load())

	// The whole budget is usable: 100-byte events fill more than half the
	// cap (in batches while they fit, then one at a time).
	for _, n := range []int{64, 1} {
		batch := make([][]byte, n)
		for i := range batch {
			batch[i] = make([]byte, 100)
		}
		for {
			if _, err := w.Append(context.Background(), batch...); err != nil {
				require.ErrorIs(t, err, ErrFull)
				break
			}
		}
	}
	require.GreaterOrEqual(t, w.Stats().PendingBytes, uint64(w.opts.MaxBytes/2))
}

// TestReservationReleaseWakesWaiters: while a Block append commits, its
// events count twice, as stored cost and as reservation, so a waiter that
// looks then may find no room. Releasing the reservation must wake it.
func TestReservationReleaseWakesWaiters(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true, MaxBytes: 1 << 20, OnFull: Block})
	require.NoError(t, err)
	defer w.Close()
	req := newReq([][]byte{make([]byte, 100)})
	req.cost, req.size = entryCost(100), 100
	require.NoError(t, w.reserve(context.Background(), req))
	var space chan struct{}
	w.group.run(req, func(batch []*appendReq) {
		w.commit(batch)
		// What a waiter looking now would wait on.
		w.group.mu.Lock()
		space = w.group.space
		w.group.mu.Unlock()
	})
	require.NoError(t, req.err)
	select {
	case <-space:
	default:
		t.Fatal("waiters that looked during the commit are not woken when the reservation is released")
	}
}
