package emitter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/clocktest"
	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/internal/verify"
)

// virtualRig is a whole emitter (spool, drainer, Unix socket, a receiver)
// on a fake clock that Leap drives from timer to timer: every wait the
// emitter makes is on Options.Clock, so minutes of its time pass in a
// fraction of a second of real time, with the default timeouts.
type virtualRig struct {
	t    *testing.T
	clk  *clocktest.Fake
	sock string
	em   *emitter.Emitter
	logs *logSink
	real time.Time // when it started, in real time
}

func newVirtualRig(t *testing.T, opts emitter.Options) *virtualRig {
	dir := t.TempDir()
	r := &virtualRig{t: t, clk: clocktest.NewFake(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)),
		sock: filepath.Join(dir, "events.sock"), logs: &logSink{}, real: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	go r.clk.Leap(ctx, 50*time.Microsecond)
	opts.Clock, opts.NoSync, opts.Stdout, opts.Logger = r.clk, true, io.Discard, slog.New(r.logs)
	em, err := emitter.Open(r.sock, filepath.Join(dir, "spool"), &opts)
	require.NoError(t, err)
	r.em = em
	t.Cleanup(func() {
		closeCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		assert.NoError(t, em.Close(closeCtx))
		cancel()
	})
	return r
}

// elapsed is how much emitter time has passed.
func (r *virtualRig) elapsed() time.Duration {
	return r.clk.Now().Sub(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
}

// until waits, in real time, for cond; the emitter's clock runs meanwhile.
func (r *virtualRig) until(cond func() bool, msg string) {
	r.t.Helper()
	require.Eventually(r.t, cond, 20*time.Second, 100*time.Microsecond, msg)
}

func (r *virtualRig) emit(evs []string) {
	for _, ev := range evs {
		require.NoError(r.t, r.em.Emit(context.Background(), []byte(ev)))
	}
}

func (r *virtualRig) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(r.t, r.em.Flush(ctx), "stats: %+v", r.em.Stats())
}

// report logs the emitter time that passed beside the real time it took.
// (No bound on the real time is asserted: this is not a benchmark; that
// the emitter's time ran ahead is asserted by each test.)
func (r *virtualRig) report(what string) {
	r.t.Logf("%s: %v of emitter time in %v of real time", what, r.elapsed().Round(time.Second), time.Since(r.real).Round(time.Millisecond))
}

// A receiver frozen for 100 s of emitter time with a backlog queued on its
// socket: the drainer keeps the connection (no innocent dead letter, no
// second connection onto it) and, once it reads again, everything arrives
// once, in order. Long only (make torture): tens of thousands of timer
// steps take as many seconds under -race; the rule is delivery's table
// ("frozen: read nothing, keeps the connection"), and TestFrozenReceiver
// proves it end to end with a process frozen ten times its stall timeout.
func TestVirtualTimeFreeze(t *testing.T) {
	if !testmode.Long() {
		t.Skip("100 s of emitter time, tens of seconds of real time: make torture (EVSPOOL_TORTURE=long)")
	}
	t.Parallel()
	r := newVirtualRig(t, emitter.Options{})
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	sent := events("freeze", 2000)
	r.emit(sent[:100])
	r.until(func() bool { return rcv.Count() == 100 }, "the first 100 arrive")
	rcv.PauseReading()
	froze := r.elapsed()
	r.emit(sent[100:])
	r.until(func() bool { return r.elapsed()-froze >= 100*time.Second }, "100 s of emitter time pass")
	st := r.em.Stats()
	assert.False(t, st.OutageStart.IsZero(), "a receiver frozen 100 s is an outage: %+v", st)
	assert.NotZero(t, st.Pending, "the backlog waits for it")
	rcv.ResumeReading()
	r.flush()
	r.report("100 s freeze")
	st = r.em.Stats()
	res := verify.Check(sent, rcv.Lines())
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates, "one connection, kept: nothing resent")
	assert.Zero(t, st.DeadLettered)
	assert.Zero(t, st.Reconnects)
	assert.GreaterOrEqual(t, r.elapsed()-froze, 100*time.Second)
}

// A receiver that crash-loops (accepts, reads, dies before handling
// anything, restarts at once behind the listener a supervisor keeps, as
// with socket activation) is dialled less and less often, on the
// emitter's clock; nothing is set aside as poison, and once it stays up
// everything arrives in order. (A listener closed between crashes would
// let the emitter's clock run past 250 ms whenever the test is slow to
// listen again: a paced restart, rightly dialled at once.)
func TestVirtualTimeCrashLoop(t *testing.T) {
	t.Parallel()
	r := newVirtualRig(t, emitter.Options{})
	sent := events("crashloop", 50)
	r.emit(sent)
	const crashes = 12
	var accepted []time.Duration // emitter time of each connection
	ln, err := net.Listen("unix", r.sock)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // the receiver below takes the path over
	for range crashes {
		conn, err := ln.Accept()
		require.NoError(t, err)
		accepted = append(accepted, r.elapsed())
		buf := make([]byte, 4096)
		_, _ = conn.Read(buf) // read ahead, then die before handling it
		conn.Close()
	}
	ln.Close()
	require.NoError(t, os.Remove(r.sock))
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flush()
	r.report("crash loop")
	var gaps []time.Duration
	for i := 1; i < len(accepted); i++ {
		gaps = append(gaps, accepted[i]-accepted[i-1])
	}
	t.Logf("emitter time between the crash loop's connections: %v", gaps)
	assert.Greater(t, gaps[len(gaps)-1], 4*gaps[0], "the pause grows as the receiver keeps dying")
	assert.Less(t, time.Since(r.real), accepted[len(accepted)-1], "the pauses are the emitter's, on its clock, not real time")
	st := r.em.Stats()
	res := verify.Check(sent, rcv.Lines())
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates)
	assert.Zero(t, st.DeadLettered, "a receiver that dies on everything has no poison event")
	seq, ok := r.logs.attr("receiver crash-looping: failed 3 times in a row before handling an event; backing off", "oldest_seq")
	require.True(t, ok, "the crash loop is logged, naming the event the receiver gets first")
	assert.EqualValues(t, 1, seq.Uint64())
	first, _ := r.logs.attr("receiver crash-looping: failed 3 times in a row before handling an event; backing off", "oldest_first_bytes")
	assert.Equal(t, fmt.Sprintf("%.80q", sent[0]), first.String(), "its first 80 bytes")
}

// A hold never released is released by MaxHold, on the emitter's clock:
// nothing is written before it ends, everything after.
func TestVirtualTimeMaxHold(t *testing.T) {
	t.Parallel()
	r := newVirtualRig(t, emitter.Options{MaxHold: 10 * time.Minute})
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	held := r.elapsed() // before Hold: the clock may move on while Hold stamps its start
	r.em.Hold()
	sent := events("held", 100)
	r.emit(sent)
	r.until(func() bool {
		n := rcv.Count() // before Held: a line counted while still held was written while held
		if r.em.Held() {
			require.Zero(t, n, "nothing written while held")
			return false
		}
		return true
	}, "MaxHold releases the hold")
	require.GreaterOrEqual(t, r.elapsed()-held, 10*time.Minute)
	r.flush()
	r.report("MaxHold")
	res := verify.Check(sent, rcv.Lines())
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates)
	assert.Equal(t, 1, r.logs.count(slog.LevelWarn, "delivery held longer than the maximum; released without Release"))
}
