//go:build linux

package emitter

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// settled reports whether the run goroutine idles and is not yet woken (a
// parked drainer with a wake pending takes the lock back at once, and an
// Emit meeting it there wakes it rather than sending inline).
func settled(d *drainer) bool {
	d.ctl.run.Lock()
	defer d.ctl.run.Unlock()
	return d.ctl.parked && len(d.wake) == 0
}

// openOnReceiver starts a receiver and opens an emitter on it (NoSync, no
// echo, opts' other fields as given), both closed at the test's end; it
// returns the emitter's drainer too.
func openOnReceiver(t *testing.T, opts Options) (*Emitter, *drainer, *refrecv.Receiver) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { rcv.Close() })
	opts.NoSync, opts.Stdout = true, io.Discard
	e, d, err := open(context.Background(), sock, filepath.Join(dir, "spool"), &opts)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(context.Background()) })
	return e, d, rcv
}

// caughtUp delivers one event and waits until the drainer idles after it.
func caughtUp(t *testing.T, e *Emitter, d *drainer, rcv *refrecv.Receiver) {
	t.Helper()
	require.NoError(t, e.Emit(context.Background(), []byte("first")))
	require.Eventually(t, func() bool { return len(rcv.Lines()) == 1 && settled(d) }, 5*time.Second, time.Millisecond)
}

// With the drainer idle and caught up, Emit writes its events itself: the
// drainer is not woken, and the receiver has each line in order, once.
func TestEmitSendsInlineWhenCaughtUp(t *testing.T) {
	t.Parallel()
	e, d, rcv := openOnReceiver(t, Options{ReplayLinger: 20 * time.Millisecond})
	caughtUp(t, e, d, rcv)
	ctx := context.Background()

	const n = 50
	sent := []string{"first"}
	buf := make([]byte, 0, 64)
	for i := range n {
		ev := fmt.Sprintf("inline %d", i)
		sent = append(sent, ev)
		require.Eventually(t, func() bool { return settled(d) }, 5*time.Second, time.Millisecond)
		before := d.ctl.inlined.Load()
		buf = append(buf[:0], ev...)
		require.NoError(t, e.Emit(ctx, buf))
		copy(buf, "reused") // the caller's to change once Emit returns
		d.ctl.run.Lock()
		for _, s := range d.w.sent { // kept for a resend: copies
			require.Equal(t, sent[s.Seq-1], string(s.Data))
		}
		d.ctl.run.Unlock()
		if d.ctl.inlined.Load() == before {
			continue // the drainer was busy (a look, a receiver slower to read): it sent
		}
		require.Eventually(t, func() bool { return len(rcv.Lines()) == len(sent) }, 5*time.Second, time.Millisecond,
			"written by Emit")
		time.Sleep(2 * time.Millisecond) // the receiver reads it; the next Emit sees that
	}
	require.Greater(t, d.ctl.inlined.Load(), uint64(n/2), "Emits sent inline out of %d", n)
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, e.Flush(fctx))
	require.Equal(t, sent, rcv.Lines(), "every line once, in order")
}

// An inline send never waits: against a receiver that stopped reading, Emit
// returns at once after the send buffer fills, however long WriteTimeout is;
// the drainer then owns the stall, and all is delivered once it reads again.
func TestInlineNeverWaits(t *testing.T) {
	t.Parallel()
	e, d, rcv := openOnReceiver(t, Options{WriteTimeout: time.Minute, StallTimeout: time.Minute})
	caughtUp(t, e, d, rcv)
	ctx := context.Background()
	rcv.PauseReading()
	before := d.ctl.inlined.Load()

	line := make([]byte, 4000)
	for i := range line {
		line[i] = 'x'
	}
	var slowest time.Duration
	for range 200 { // 800 kB: many times a Unix socket's send buffer
		start := time.Now()
		require.NoError(t, e.Emit(ctx, line))
		slowest = max(slowest, time.Since(start))
	}
	require.Less(t, slowest, 10*time.Second, "an Emit waited for the receiver (WriteTimeout is a minute)")
	require.NotEqual(t, before, d.ctl.inlined.Load(), "nothing was sent inline")
	rcv.ResumeReading()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, e.Flush(fctx))
	require.Len(t, rcv.Lines(), 201, "every line once")
}
