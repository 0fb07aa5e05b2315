package emitter_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/testrecv"
	"github.com/evspool/evspool/internal/verify"
)

// evspool stops (here Close; a SIGKILL in the torture's
// TestPrecisionEvspoolKills) with events written but not all handled by a
// receiver that stays up: it handles them anyway, and the next Open on the
// spool, finding the same receiver process, does not resend them.
func TestReopenSameReceiverResendsNothing(t *testing.T) {
	em, rcv, spool, logs := cepRig(t, testrecv.CEPConfig{PerLine: time.Millisecond}, emitter.Options{})
	sent := events("reopen", 300)
	for _, ev := range sent {
		require.NoError(t, em.Emit(context.Background(), []byte(ev)))
	}
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= 50 }, 10*time.Second, time.Millisecond)
	require.NoError(t, em.Close(context.Background()))
	require.Less(t, len(rcv.Lines()), 300, "stopped with events not yet handled")

	reopenResendsNothing(t, spool, rcv, logs, sent)
}

// The receiver accepts later than a new connection waits for it before
// writing (2 s), so the burst is written in full before the accept, when its
// end has no inode yet and it cannot be identified, and nothing is written
// after the accept: the note is made once it has accepted, not given up
// with the writes.
func TestReopenSameReceiverAcceptedLate(t *testing.T) {
	em, rcv, spool, logs := cepRig(t, testrecv.CEPConfig{PerLine: 10 * time.Millisecond, AcceptDelay: 2500 * time.Millisecond}, emitter.Options{})
	sent := events("late", 30)
	burst := make([][]byte, len(sent))
	for i, ev := range sent {
		burst[i] = []byte(ev)
	}
	require.NoError(t, em.Emit(context.Background(), burst...)) // one commit, one write
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, rcv.Lines(), "written before the receiver accepted")
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= 5 }, 10*time.Second, time.Millisecond)
	require.NoError(t, em.Close(context.Background()))
	require.Less(t, len(rcv.Lines()), len(sent), "stopped with events not yet handled")

	reopenResendsNothing(t, spool, rcv, logs, sent)
}

// reopenResendsNothing opens the spool again, to the same receiver, and
// checks that it then has every event once, none resent, and that the new
// emitter said why.
func reopenResendsNothing(t *testing.T, spool string, rcv *testrecv.CEP, logs *logSink, sent []string) {
	t.Helper()
	em2, err := emitter.Open(filepath.Join(filepath.Dir(spool), "s.sock"), spool, &emitter.Options{NoSync: true, Stdout: io.Discard, Logger: slog.New(logs)})
	require.NoError(t, err)
	defer em2.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, em2.Flush(ctx))
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= len(sent) }, 10*time.Second, time.Millisecond)
	res := verify.Check(sent, rcv.Lines())
	t.Logf("%v", res)
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates)
	assert.Equal(t, 1, logs.count(slog.LevelInfo, "the receiver handled what the previous run wrote to it; not resending that"))
}

// lineReceiver accepts one connection on ln and records each line its
// scanner (of at most maxLine bytes a line) returns; a connection whose
// scanner fails is sent on failed and left open, as cloud-event-proxy
// leaves it, else closed at EOF.
func lineReceiver(t *testing.T, ln net.Listener, maxLine int, got *lockedLines, failed chan<- net.Conn) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		got.add(sc.Text())
	}
	if sc.Err() != nil {
		failed <- c
		return
	}
	c.Close()
}

type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *lockedLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// cloud-event-proxy leaves a connection whose scanner failed (a line over
// 64 KiB) open, and Go's finalizer closes it at a garbage collection while
// the process lives. evspool stops (Close here, a SIGKILL in production)
// with the long line written: the next Open finds the same reader alive and
// its end closed. That proves the events before the long line handled,
// nothing from it on: it is resent (it was taken as handled, never
// delivered, before).
func TestAdoptionStopsAtALineTooLong(t *testing.T) {
	dir := t.TempDir()
	sock, spool := filepath.Join(dir, "s.sock"), filepath.Join(dir, "spool")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	var got lockedLines
	failed := make(chan net.Conn, 1)
	go lineReceiver(t, ln, bufio.MaxScanTokenSize, &got, failed)

	logs := &logSink{}
	opts := emitter.Options{NoSync: true, Stdout: io.Discard, Logger: slog.New(logs), MaxEventSize: 128 << 10}
	em, err := emitter.Open(sock, spool, &opts)
	require.NoError(t, err)
	before, after := events("before", 100), events("after", 100)
	long := "long " + strings.Repeat("x", 70000)
	sent := append(append(append([]string(nil), before...), long), after...)
	for _, ev := range sent {
		require.NoError(t, em.Emit(context.Background(), []byte(ev)))
	}
	var c1 net.Conn
	select {
	case c1 = <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver's scanner did not fail on the long line")
	}
	require.Equal(t, before, got.get(), "handled up to the long line")
	require.NoError(t, em.Close(context.Background()))
	require.NoError(t, c1.Close()) // the garbage collector's close

	go lineReceiver(t, ln, 1<<20, &got, failed) // a receiver that can take it now
	em2, err := emitter.Open(sock, spool, &opts)
	require.NoError(t, err)
	defer em2.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, em2.Flush(ctx))
	assert.Eventually(t, func() bool { return len(got.get()) >= len(sent) }, 5*time.Second, time.Millisecond)
	res := verify.Check(sent, got.get())
	t.Logf("%v; still spooled %d", res, em2.Stats().Spool.PendingEvents)
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Missing, "lost")
	assert.Zero(t, res.Duplicates)
	assert.Equal(t, 1, logs.count(slog.LevelInfo, "resending from a line longer than the receiver reads: its closed connection proves nothing after it"))
	// The events before the long line are acknowledged either before the
	// stop (the receiver began the long line with a fresh read, which
	// proves them handled) or by the adoption at the next start: never the
	// long line itself.
	if n, ok := logs.attr("the receiver handled what the previous run wrote to it; not resending that", "through_seq"); ok {
		assert.EqualValues(t, 100, n.Uint64(), "adopted through the event before the long line")
	} else {
		assert.EqualValues(t, 101, em2.AtOpen().FirstSeq, "nothing adopted: the events before the long line were acknowledged before the stop")
	}
}
