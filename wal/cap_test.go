package wal_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/wal"
)

// capSlack is how far past MaxBytes the file may ever be seen.
const capSlack = 1 << 20

type capCase struct {
	name     string
	maxBytes int64
	batch    int
	small    bool // 100-byte events: at least MaxBytes/2 of them fit
	size     func(r *rand.Rand) int
}

var capCases = []capCase{
	{"4MiB/100B", 4 << 20, 1000, true, func(*rand.Rand) int { return 100 }},
	{"1MiB/100B", 1 << 20, 200, true, func(*rand.Rand) int { return 100 }},
	{"4MiB/mixed-to-64KiB", 4 << 20, 4, false, func(r *rand.Rand) int {
		if r.IntN(3) == 0 {
			return 64<<10 - r.IntN(1024)
		}
		return 100 + r.IntN(32<<10)
	}},
}

// capRun collects what a cap test saw.
type capRun struct {
	t         *testing.T
	c         capCase
	w         *wal.WAL
	maxSize   int64
	maxBlocks int64
	minFull   float64 // lowest PendingBytes/MaxBytes seen once full
	full      bool
}

// sample checks the file's size on disk after an append batch, and the
// pending bytes too when the spool is full.
func (r *capRun) sample(full bool) {
	size, blocks := spDiskUsage(r.t, r.w.Path())
	r.maxSize, r.maxBlocks = max(r.maxSize, size), max(r.maxBlocks, blocks)
	require.LessOrEqual(r.t, size, r.c.maxBytes+capSlack, "file size")
	require.LessOrEqual(r.t, blocks, r.c.maxBytes+capSlack, "blocks on disk")
	if full {
		ratio := float64(r.w.Stats().PendingBytes) / float64(r.c.maxBytes)
		if r.minFull == 0 || ratio < r.minFull {
			r.minFull = ratio
		}
		if r.c.small {
			// 0.48, not 0.5, since records carry the boot clock (8 bytes).
			require.GreaterOrEqual(r.t, ratio, 0.48, "pending bytes / MaxBytes once full")
		}
	}
}

func (r *capRun) report(policy wal.Policy) {
	s := r.w.Stats()
	r.t.Logf("%s %s: max file %d (%.2f x MaxBytes), max on disk %d (%.2f x), pending/MaxBytes once full >= %.2f; dropped oldest %d newest %d, compactions %d",
		policy, r.c.name, r.maxSize, float64(r.maxSize)/float64(r.c.maxBytes), r.maxBlocks,
		float64(r.maxBlocks)/float64(r.c.maxBytes), r.minFull, s.DroppedOldest.Events, s.DroppedNewest.Events, s.Compactions)
	require.True(r.t, r.full, "the spool never filled")
}

// capFills is how many times MaxBytes TestCap appends: enough to fill the
// spool, free it and fill it again several times (make torture: 10).
var capFills = testmode.Pick[int64](4, 10)

// TestCap appends capFills times MaxBytes under each policy and checks the
// file's footprint on disk after every batch.
func TestCap(t *testing.T) {
	t.Parallel()
	for _, c := range capCases {
		for _, policy := range []wal.Policy{wal.DropOldest, wal.DropNewest, wal.Block} {
			t.Run(policy.String()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: c.maxBytes, OnFull: policy})
				run := &capRun{t: t, c: c, w: w}
				if policy == wal.Block {
					capBlock(run)
				} else {
					capDrop(run, policy)
				}
				run.report(policy)
			})
		}
	}
}

func capBatch(rng *rand.Rand, c capCase, next uint64) ([][]byte, int) {
	batch := make([][]byte, c.batch)
	n := 0
	for i := range batch {
		batch[i] = spEvent(next+uint64(i), c.size(rng))
		n += len(batch[i])
	}
	return batch, n
}

func capDrop(run *capRun, policy wal.Policy) {
	t, c, w := run.t, run.c, run.w
	rng := rand.New(rand.NewPCG(1, uint64(c.maxBytes)))
	next := uint64(1)
	for written := int64(0); written < capFills*c.maxBytes; {
		batch, n := capBatch(rng, c, next)
		last, err := w.Append(context.Background(), batch...)
		switch {
		case err == nil:
			require.Equal(t, next+uint64(len(batch))-1, last)
			next = last + 1
		case policy == wal.DropNewest && errors.Is(err, wal.ErrFull):
		default:
			require.NoError(t, err)
		}
		written += int64(n)
		s := w.Stats()
		run.full = run.full || s.DroppedOldest.Events > 0 || s.DroppedNewest.Events > 0
		run.sample(run.full)
	}
	// What is left is contiguous: the newest (DropOldest) or the oldest
	// (DropNewest) events.
	es := spReadAll(t, w)
	require.NotEmpty(t, es)
	for i, e := range es {
		require.Equal(t, es[0].Seq+uint64(i), e.Seq)
		require.Equal(t, spEvent(e.Seq, len(e.Data)), e.Data)
	}
	if policy == wal.DropOldest {
		require.Equal(t, next-1, es[len(es)-1].Seq)
	} else {
		require.Equal(t, uint64(1), es[0].Seq)
	}
}

// capBlock: the producer appends; when an append with a cancelled context
// finds the spool full, it asks the acker to acknowledge a chunk and waits
// in Append for the space. The acker checks it sees every event, in order.
func capBlock(run *capRun) {
	t, c, w := run.t, run.c, run.w
	rng := rand.New(rand.NewPCG(2, uint64(c.maxBytes)))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	wake := make(chan struct{}, 1)
	ackerDone := make(chan error, 1)
	stop := make(chan struct{})
	var acked uint64
	go func() {
		ackerDone <- func() error {
			for {
				select {
				case <-stop:
					return nil
				case <-wake:
				}
				es, err := w.Read(acked+1, 0, int(c.maxBytes/8))
				if err != nil {
					return err
				}
				for _, e := range es {
					if e.Seq != acked+1 {
						return errors.New("acker saw a gap or reordering")
					}
					acked = e.Seq
				}
				if err := w.Ack(acked); err != nil {
					return err
				}
			}
		}()
	}()

	next := uint64(1)
	for written := int64(0); written < capFills*c.maxBytes; {
		batch, n := capBatch(rng, c, next)
		last, err := w.Append(cancelled, batch...)
		if errors.Is(err, wal.ErrFull) {
			run.full = true
			run.sample(true)
			select {
			case wake <- struct{}{}:
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			last, err = w.Append(ctx, batch...)
			cancel()
		}
		require.NoError(t, err)
		require.Equal(t, next+uint64(len(batch))-1, last)
		next = last + 1
		written += int64(n)
		run.sample(false)
	}
	close(stop)
	require.NoError(t, <-ackerDone)
	s := w.Stats()
	require.Zero(t, s.DroppedOldest.Events)
	require.Zero(t, s.DroppedNewest.Events)
	require.Equal(t, next-1, acked+s.PendingEvents, "every event is acked or pending")
	es := spReadAll(t, w)
	require.Equal(t, spRange(acked+1, next-1), spSeqs(es))
}
