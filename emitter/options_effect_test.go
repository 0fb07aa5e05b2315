package emitter_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/clocktest"
	"github.com/evspool/evspool/internal/verify"
)

// Each test here observes what one option does, so that an option Open
// took but passed on to nothing fails a test.

// AckOnWrite: an event leaves the spool once written, unproven, even while
// the receiver reads nothing.
func TestOptionAckOnWrite(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ paused bool }{
		"receiver reads":         {false},
		"receiver reads nothing": {true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, &refrecv.Options{}, &emitter.Options{AckOnWrite: true})
			if tc.paused {
				r.rcv.PauseReading()
			}
			sent := events("ackonwrite", 30)
			r.emitAll(sent)
			if !tc.paused {
				r.flushUnproven(10*time.Second, len(sent))
				requireDelivered(t, sent, waitLines(t, r.rcv, len(sent)))
				return
			}
			statsUntil(t, r.em, "acknowledged once written", func(st emitter.Stats) bool { return st.Pending == 0 && st.Unproven == 30 })
			require.Zero(t, r.rcv.Count(), "the receiver read nothing: the write alone let them go")
			require.Zero(t, r.em.Stats().Delivered)
			r.rcv.ResumeReading()
			requireDelivered(t, sent, waitLines(t, r.rcv, len(sent)))
		})
	}
}

// ReplayWindow (a size): a read event stays spooled until that many bytes
// more were read after it, and is resent if the receiver goes before.
func TestOptionReplayWindowSize(t *testing.T) {
	t.Parallel()
	const n = 60
	sent := events("window", n)
	size := len(sent[0]) + 1 // every event has the same length
	tests := map[string]struct{ window, held int }{
		"one byte holds the last event": {1, 1},
		"five events' bytes":            {5 * size, 5},
		"twenty events' bytes":          {20 * size, 20},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A linger of an hour: only the window's bytes prove an event handled.
			r := newRig(t, &refrecv.Options{}, &emitter.Options{ReplayWindow: tc.window, ReplayLinger: time.Hour})
			r.emitAll(sent)
			waitLines(t, r.rcv, n)
			statsUntil(t, r.em, fmt.Sprintf("the window holds %d events", tc.held), func(st emitter.Stats) bool {
				return st.Delivered == n-uint64(tc.held) && st.Pending == uint64(tc.held)
			})
			require.NoError(t, r.rcv.Kill())
			require.NoError(t, r.rcv.Restart())
			// The resend may begin with the newest event acknowledged, as the
			// witness that the receiver moved past it.
			var got []string
			require.Eventually(t, func() bool {
				got = r.rcv.Lines()
				return len(got) >= n+tc.held && got[len(got)-1] == sent[n-1]
			}, 10*time.Second, time.Millisecond, "the window resent")
			assert.Equal(t, sent[n-tc.held:], got[len(got)-tc.held:], "the window is what is resent")
			assert.LessOrEqual(t, len(got), n+tc.held+1, "the window and at most the witness are resent")
			assert.True(t, verify.Check(sent, got).OK())
		})
	}
}

// BatchEvents and BatchBytes bound what one write carries: the drainer
// writes a batch, waits until the receiver read it, then writes the next,
// so a receiver's read never holds more than one batch.
func TestOptionBatchBounds(t *testing.T) {
	t.Parallel()
	const n = 40
	sent := events("batch", n)
	data := len(sent[0]) // BatchBytes counts the events' bytes, without newlines
	tests := map[string]struct {
		opts emitter.Options
		most int // lines in the largest read
	}{
		"one event":               {emitter.Options{BatchEvents: 1}, 1},
		"three events":            {emitter.Options{BatchEvents: 3}, 3},
		"two events' bytes":       {emitter.Options{BatchBytes: 2 * data}, 2},
		"bytes bound before all":  {emitter.Options{BatchEvents: 5, BatchBytes: 4 * data}, 4},
		"events bound before all": {emitter.Options{BatchEvents: 2, BatchBytes: 4 * data}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reads := readsOf(t, tc.opts, sent)
			assert.Equal(t, tc.most, slices.Max(reads), "lines per read: %v", reads)
		})
	}
	t.Run("defaults batch more", func(t *testing.T) {
		t.Parallel() // the rig sees batches: a default batch is a 2 KiB chunk at a time
		reads := readsOf(t, emitter.Options{}, sent)
		assert.Less(t, len(reads), n/4, "lines per read: %v", reads)
	})
}

// readsOf spools sent, then starts a receiver that reads with a large
// buffer and returns the lines each of its reads held.
func readsOf(t *testing.T, opts emitter.Options, sent []string) []int {
	t.Helper()
	r := newRig(t, nil, &opts)
	r.emitAll(sent) // before the receiver is there: every write is the drainer's
	ln, err := net.Listen("unix", r.sock)
	require.NoError(t, err)
	defer ln.Close()
	conn, err := ln.Accept()
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	var reads []int
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for total := 0; total < len(sent); {
		k, err := conn.Read(buf)
		require.NoError(t, err, "after %d lines", total)
		lines := bytes.Count(buf[:k], []byte{'\n'})
		reads, total = append(reads, lines), total+lines
		got.Write(buf[:k])
	}
	requireDelivered(t, sent, strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n"))
	return reads
}

// MinBackoff and MaxBackoff bound the pauses between refused dials: the
// first is about MinBackoff, they grow, and none passes MaxBackoff.
func TestOptionBackoffBounds(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ min, max time.Duration }{
		"defaults":        {0, 0},
		"a second to 8 s": {time.Second, 8 * time.Second},
		"1 min to 10 min": {time.Minute, 10 * time.Minute},
		"fixed 3 s":       {3 * time.Second, 3 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lo, hi := cmp.Or(tc.min, emitter.DefaultMinBackoff), cmp.Or(tc.max, emitter.DefaultMaxBackoff)
			gaps := dialGaps(t, emitter.Options{MinBackoff: tc.min, MaxBackoff: tc.max}, 12)
			t.Logf("pauses between refused dials: %v", gaps)
			// backoff/v4's jitter is ±50 %, and MaxBackoff caps it.
			assert.GreaterOrEqual(t, gaps[0], lo/2, "the first pause")
			assert.LessOrEqual(t, gaps[0], min(lo*3/2, hi), "the first pause")
			assert.LessOrEqual(t, slices.Max(gaps), hi, "no pause passes MaxBackoff")
			assert.GreaterOrEqual(t, slices.Max(gaps), hi/2, "the pauses grow up to MaxBackoff")
			assert.GreaterOrEqual(t, slices.Min(gaps), min(lo/2, hi), "no pause is shorter than MinBackoff jittered")
		})
	}
}

// dialGaps opens an emitter on a fake clock whose every dial is refused and
// returns the emitter time between its first dials.
func dialGaps(t *testing.T, opts emitter.Options, dials int) []time.Duration {
	t.Helper()
	clk := clocktest.NewFake(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var at []time.Time
	opts.Dial = func(context.Context, string, string) (net.Conn, error) {
		mu.Lock()
		at = append(at, clk.Now())
		mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	opts.Clock, opts.NoSync, opts.Stdout, opts.Logger = clk, true, io.Discard, slog.New(slog.DiscardHandler)
	ctx, stop := context.WithCancel(context.Background())
	go clk.Leap(ctx, 50*time.Microsecond)
	em, err := emitter.Open(filepath.Join(t.TempDir(), "events.sock"), t.TempDir(), &opts)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(at) > dials },
		20*time.Second, time.Millisecond, "dials on the fake clock")
	require.NoError(t, em.Close(context.Background()))
	stop()
	mu.Lock()
	defer mu.Unlock()
	gaps := make([]time.Duration, dials)
	for i := range gaps {
		gaps[i] = at[i+1].Sub(at[i])
	}
	return gaps
}

// MaxDeadLetterBytes: a dead-letter file that would outgrow it is rotated
// to dead-letters.1 before the next event set aside is appended.
func TestOptionMaxDeadLetterBytes(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		max             int64
		current, before int // records in dead-letters and dead-letters.1
	}{
		"default: one file":          {0, 2, 0},
		"a record's size: rotated":   {100, 1, 1},
		"room for both: not rotated": {4 << 10, 2, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			em, rcv, spool, _ := cepRig(t, refrecv.CEPConfig{}, emitter.Options{ReplayLinger: time.Second, MaxDeadLetterBytes: tc.max})
			good := events("dl", 6)
			for _, ev := range []string{good[0], good[1], refrecv.DefaultRestartLine, good[2], good[3], refrecv.DefaultRestartLine, good[4], good[5]} {
				require.NoError(t, em.Emit(context.Background(), []byte(ev)))
			}
			statsUntil(t, em, "both restart lines set aside", func(st emitter.Stats) bool { return st.DeadLettered == 2 })
			require.Eventually(t, func() bool { return verify.Check(good, rcv.Lines()).OK() }, 10*time.Second, 5*time.Millisecond)
			assert.Equal(t, tc.current, deadLetterRecords(t, filepath.Join(spool, ledger.DeadLetterFile)), "in dead-letters")
			assert.Equal(t, tc.before, deadLetterRecords(t, filepath.Join(spool, ledger.DeadLetterFile+".1")), "in dead-letters.1")
			dls, err := ledger.ReadDeadLetters(spool)
			require.NoError(t, err)
			require.Len(t, dls, tc.current+tc.before)
			assert.Equal(t, refrecv.DefaultRestartLine, string(dls[len(dls)-1].Data), "the newest is kept in either case")
		})
	}
}

// statsUntil waits until em's Stats satisfy cond, and fails with the last
// ones seen if they do not within 20 s.
func statsUntil(t *testing.T, em *emitter.Emitter, what string, cond func(emitter.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st := em.Stats()
		if cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s; last stats: %+v", what, st)
		}
		<-tick.C
	}
}

// deadLetterRecords counts the records of a dead-letter file; 0 if missing.
func deadLetterRecords(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return bytes.Count(b, []byte(ledger.DeadLetterMagic+" "))
}
