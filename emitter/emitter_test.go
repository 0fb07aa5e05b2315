package emitter_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
	"github.com/evspool/evspool/wal"
)

func TestDeliversInOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	sent := events("a", 2000)
	r.emitAll(sent)
	r.flush(10 * time.Second)
	waitDelivered(t, r.rcv, sent)
	st := r.em.Stats()
	require.EqualValues(t, 2000, st.Delivered)
	require.Zero(t, st.Pending)
	require.True(t, st.Connected)
}

func TestTCP(t *testing.T) {
	t.Parallel()
	rcv, err := refrecv.Start("tcp", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer rcv.Close()
	em, err := emitter.Open(rcv.Addr(), t.TempDir(), &emitter.Options{Network: "tcp", NoSync: true, Stdout: &bytes.Buffer{}})
	require.NoError(t, err)
	defer em.Close(context.Background())
	sent := events("tcp", 500)
	// One commit, then Flush at once: an event leaves the spool
	// ReplayLinger (2 s) after it is written, and 500 commits one by one
	// can take longer than that on a loaded machine, leaving Flush less
	// to wait for.
	batch := make([][]byte, len(sent))
	for i, ev := range sent {
		batch[i] = []byte(ev)
	}
	require.NoError(t, em.Emit(context.Background(), batch...))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Over TCP nothing proves an event handled: Flush says so, and counts
	// them written, never delivered.
	err = em.Flush(ctx)
	var fe *emitter.FlushError
	require.ErrorAs(t, err, &fe)
	require.ErrorIs(t, err, emitter.ErrUnproven)
	require.NotErrorIs(t, err, emitter.ErrNotDelivered, "nothing is known lost")
	require.Equal(t, emitter.FlushError{Waited: 500, Unproven: 500}, *fe)
	st := em.Stats()
	require.EqualValues(t, 500, st.Unproven)
	require.Zero(t, st.Delivered)
	waitDelivered(t, rcv, sent)
}

func TestEchoAfterCommit(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Stdout: &out})
	require.NoError(t, r.em.Emit(context.Background(), []byte("one\n"), []byte("two")))
	require.Equal(t, "one\ntwo\n", out.String())
	require.EqualValues(t, 2, r.em.Stats().Emitted)
}

func TestEmitValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{MaxEventSize: 100})
	err := r.em.Emit(context.Background(), bytes.Repeat([]byte("x"), 100))
	var se *emitter.EventSizeError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, emitter.ErrEventTooLarge)
	require.Equal(t, 101, se.Size)
	require.Equal(t, 100, se.Limit)
	require.Contains(t, err.Error(), "101 bytes")
	require.Contains(t, err.Error(), "limit of 100")

	require.NoError(t, r.em.Emit(context.Background(), bytes.Repeat([]byte("x"), 99)), "99 bytes + newline fits")
	require.ErrorIs(t, r.em.Emit(context.Background(), []byte("a\nb")), emitter.ErrNewline)
	require.ErrorIs(t, r.em.Emit(context.Background(), []byte("ok"), []byte("bad\nline")), emitter.ErrNewline)
	require.EqualValues(t, 1, r.em.Stats().Emitted, "an invalid batch emits nothing")

	raw := []byte("bytes as they are: \r \x00 \xff\xfe")
	require.NoError(t, r.em.Emit(context.Background(), raw))
	r.flush(5 * time.Second)
	require.Equal(t, string(raw), waitLines(t, r.rcv, 2)[1])

	require.NoError(t, r.em.Close(context.Background()))
	require.ErrorIs(t, r.em.Emit(context.Background(), []byte("late")), emitter.ErrClosed)
	require.ErrorIs(t, r.em.Flush(context.Background()), emitter.ErrClosed)
	require.NoError(t, r.em.Close(context.Background()), "second Close")
}

// The receiver is killed and restarted four times while events come, each
// time mid-stream, 200 lines into a connection: everything arrives.
// After each kill the events the dead connection left unproven go one a
// write, each after the receiver read the one before (poison isolation,
// docs/delivery.md): a round trip each, a few milliseconds quiet but
// 50-200 ms beside a CPU load under the race detector, so a round may take
// seconds. What may not happen is a stop: no line for stallAfter while
// events are pending and the receiver is up.
func TestReceiverKilledMidStream(t *testing.T) {
	t.Parallel()
	const stallAfter = 3 * time.Second
	r := newRig(t, &refrecv.Options{}, nil)
	sent := events("kill", 6000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, ev := range sent {
			if err := r.em.Emit(context.Background(), []byte(ev)); err != nil {
				t.Errorf("emit %d: %v", i, err)
				return
			}
			if i%100 == 0 {
				time.Sleep(time.Millisecond) // a steady producer, not a burst
			}
		}
	}()
	var worst time.Duration
	for round := 0; round < 4; round++ {
		worst = max(worst, awaitSteady(t, r, r.rcv.Count()+200, stallAfter))
		require.NoError(t, r.rcv.Kill())
		require.NoError(t, r.rcv.Restart())
	}
	<-done
	// The backlog under the same rule; Flush then waits for the few
	// events left unproven (the receiver's count includes duplicates).
	worst = max(worst, awaitSteady(t, r, len(sent), stallAfter))
	r.flush(20 * time.Second)
	res := waitDelivered(t, r.rcv, sent)
	t.Logf("%s; reconnects %d; longest wait for a line %v", res, r.em.Stats().Reconnects, worst)
	require.GreaterOrEqual(t, r.em.Stats().Reconnects, uint64(4))
}

// awaitSteady waits until the receiver has n lines, each within stallAfter
// of the one before, and returns the longest of those waits.
func awaitSteady(t *testing.T, r *rig, n int, stallAfter time.Duration) time.Duration {
	t.Helper()
	var worst time.Duration
	for c := r.rcv.Count(); c < n; c = r.rcv.Count() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), stallAfter)
		err := r.rcv.WaitCount(ctx, c+1)
		cancel()
		require.NoError(t, err, "delivery stopped: no line for %v with the receiver up; stats %+v", stallAfter, r.em.Stats())
		worst = max(worst, time.Since(start))
	}
	return worst
}

// The receiver stops reading, events pile up unread in its socket buffer,
// then it dies: none of them may have been acknowledged, and all arrive once
// it is back.
func TestUnreadDataReplayed(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	warm := events("warm", 10)
	r.emitAll(warm)
	r.flush(5 * time.Second)

	r.rcv.PauseReading()
	sent := events("unread", 500)
	r.emitAll(sent)
	// Give the drainer time to write them all into the socket buffer.
	require.Eventually(t, func() bool { return r.em.Stats().Spool.Acked == 10 && r.em.Stats().Spool.Appended == 510 }, 5*time.Second, time.Millisecond)
	time.Sleep(100 * time.Millisecond) // let writes happen; nothing may be acked meanwhile
	st := r.em.Stats()
	require.EqualValues(t, 10, st.Delivered, "events unread by the receiver must not be acknowledged")
	require.EqualValues(t, 500, st.Pending)

	require.NoError(t, r.rcv.Kill())
	before := len(r.rcv.Lines())
	require.NoError(t, r.rcv.Restart())
	r.rcv.ResumeReading()
	r.flush(10 * time.Second)
	// Lines the dead receiver had already read from the socket may still be
	// recorded after Kill returns, so wait for what is missing, not a count.
	// The new connection isolates what the dead one left unproven, and
	// first resends the last event handled, as proof that the receiver
	// works (a one-event duplicate): warm's last.
	var res verify.Result
	expect := append([]string{warm[len(warm)-1]}, sent...)
	require.Eventually(t, func() bool {
		res = verify.Check(expect, r.rcv.Lines()[before:])
		return res.Missing <= 1
	}, 10*time.Second, 2*time.Millisecond, "still missing: %v", &res)
	requireDelivered(t, sent, withoutLine(r.rcv.Lines()[before:], warm[len(warm)-1]))
}

// withoutLine returns lines without the one equal to drop (at most once).
func withoutLine(lines []string, drop string) []string {
	for i, l := range lines {
		if l == drop {
			return append(append([]string(nil), lines[:i]...), lines[i+1:]...)
		}
	}
	return lines
}

// A receiver that reads nothing at all is frozen, not poisoned: it keeps
// its one connection (no connection after connection, nothing set aside),
// and once it is gone everything goes to the next one.
func TestNeverReadingReceiver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := dir + "/s.sock"
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{NeverRead: true})
	require.NoError(t, err)
	em, err := emitter.Open(sock, dir+"/spool", &emitter.Options{NoSync: true, Stdout: &bytes.Buffer{},
		WriteTimeout: 50 * time.Millisecond, StallTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer em.Close(context.Background())
	sent := events("stuck", 300)
	for _, ev := range sent {
		require.NoError(t, em.Emit(context.Background(), []byte(ev)))
	}
	require.Eventually(t, func() bool { return !em.Stats().OutageStart.IsZero() }, 5*time.Second, 5*time.Millisecond,
		"a receiver that reads nothing is an outage")
	st := em.Stats()
	require.NotZero(t, st.Stalls)
	require.Zero(t, st.Delivered)
	require.Zero(t, st.Reconnects, "one connection")
	require.Zero(t, st.DeadLettered)
	require.NoError(t, rcv.Kill())

	good, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer good.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	waitDelivered(t, good, sent)
}

// A slow receiver (200 lines/s, so a 2 KiB write takes ~100 ms to read)
// against a 20 ms write timeout: deadlines fire, the stall is logged and
// counted, and the connection is kept, so nothing is resent or reordered.
func TestSlowReceiver(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{Rate: 200}, &emitter.Options{WriteTimeout: 20 * time.Millisecond})
	sent := events("slow", 300)
	r.emitAll(sent)
	r.flush(30 * time.Second)
	res := waitDelivered(t, r.rcv, sent)
	st := r.em.Stats()
	t.Logf("%s; stalls %d, write errors %d, reconnects %d", res, st.Stalls, st.WriteErrors, st.Reconnects)
	require.NotZero(t, st.Stalls, "the write timeout fired")
	require.Zero(t, st.Reconnects, "a slow receiver keeps its connection")
	require.Zero(t, res.Duplicates)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "receiver is not reading; keeping the connection"), "rate-limited")
}

// A receiver slower than the stall timeout keeps its connection (a new one would only be read beside the old one, out of order): nothing
// is resent, nothing reordered.
func TestStalledReceiverKeepsConnection(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{Rate: 200}, &emitter.Options{WriteTimeout: 20 * time.Millisecond, StallTimeout: 60 * time.Millisecond})
	sent := events("stalled", 400)
	r.emitAll(sent)
	r.flush(30 * time.Second)
	res := waitDelivered(t, r.rcv, sent)
	st := r.em.Stats()
	t.Logf("%s; stalls %d, write errors %d, reconnects %d", res, st.Stalls, st.WriteErrors, st.Reconnects)
	require.Zero(t, st.Reconnects)
	require.Zero(t, res.Duplicates)
	require.NotZero(t, st.Stalls)
}

func TestSocketMissingAtStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, nil)
	sent := events("early", 100)
	r.emitAll(sent)
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors >= 3 }, 5*time.Second, time.Millisecond)
	st := r.em.Stats()
	require.False(t, st.Connected)
	require.Contains(t, st.LastError, "no such file")
	require.EqualValues(t, 100, st.Pending)

	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.flush(5 * time.Second)
	waitDelivered(t, rcv, sent)

	// Quiet while down: one warning for the whole outage, one info line when it ends.
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "receiver unreachable; spooling events until it is back"))
	require.Equal(t, 1, r.logs.count(slog.LevelInfo, "receiver reachable again"))
	class, ok := r.logs.attr("receiver unreachable; spooling events until it is back", "error_class")
	require.True(t, ok)
	require.Equal(t, "no_such_socket", class.String())
	held, ok := r.logs.attr("receiver reachable again", "events_held_back")
	require.True(t, ok)
	require.NotZero(t, held.Uint64())
}

func TestDialRateWhileDown(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, nil)
	start := time.Now()
	time.Sleep(time.Second) // the thing measured is what happens over this second
	n := r.em.Stats().DialErrors
	elapsed := time.Since(start)
	rate := float64(n) / elapsed.Seconds()
	t.Logf("%d dial attempts in %v (%.1f/s)", n, elapsed, rate)
	require.LessOrEqual(t, rate, 20.0)
	require.GreaterOrEqual(t, n, uint64(3), "it keeps trying")
}

func TestIdleHangUpNoticed(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	r.emitAll(events("idle", 1))
	r.flush(5 * time.Second)
	require.True(t, r.em.Stats().Connected)
	require.NoError(t, r.rcv.Close())
	require.Eventually(t, func() bool { return !r.em.Stats().Connected }, 2*time.Second, time.Millisecond,
		"a receiver gone while idle is noticed without a write")
	require.Eventually(t, func() bool {
		return r.logs.count(slog.LevelWarn, "receiver unreachable; spooling events until it is back") == 1
	}, 2*time.Second, time.Millisecond)
}

func TestConcurrentEmit(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	const producers, each = 64, 100
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := r.em.Emit(context.Background(), []byte(fmt.Sprintf("p%02d %04d", p, i))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	r.flush(20 * time.Second)
	lines := waitLines(t, r.rcv, producers*each)
	require.Len(t, lines, producers*each)
	// Each producer's events arrive in the order it emitted them.
	for p := 0; p < producers; p++ {
		var mine []string
		for _, l := range lines {
			if strings.HasPrefix(l, fmt.Sprintf("p%02d ", p)) {
				mine = append(mine, l)
			}
		}
		sent := make([]string, each)
		for i := range sent {
			sent[i] = fmt.Sprintf("p%02d %04d", p, i)
		}
		require.Equal(t, sent, mine)
	}
}

func TestCloseDuringOutageKeepsEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, nil)
	sent := events("kept", 50)
	r.emitAll(sent)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, r.em.Close(ctx), "Close must stop the drainer promptly mid-outage")
	// Counted in the closed spool: once reopened, the drainer may deliver
	// them before Stats looks.
	st, _, err := wal.Inspect(r.spool, 0)
	require.NoError(t, err)
	require.EqualValues(t, 50, st.PendingEvents)

	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	r.open(nil)
	r.flush(5 * time.Second)
	waitDelivered(t, rcv, sent)
}

func TestFullSpoolStillEchoes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newRig(t, nil, &emitter.Options{Stdout: &out, MaxSpoolBytes: 1 << 20, OnFull: wal.DropNewest})
	big := bytes.Repeat([]byte("x"), 60<<10)
	var full error
	for i := 0; i < 40 && full == nil; i++ {
		full = r.em.Emit(context.Background(), big)
	}
	require.ErrorIs(t, full, emitter.ErrSpool)
	require.ErrorIs(t, full, wal.ErrFull)
	require.True(t, strings.HasSuffix(out.String(), string(big)+"\n"), "a refused event is still echoed")
	require.NotZero(t, r.em.Stats().Dropped)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "events not spooled, echoed only"))
}

func TestDropOldestLogged(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{MaxSpoolBytes: 1 << 20})
	ev := bytes.Repeat([]byte("d"), 1000)
	batch := slices.Repeat([][]byte{ev}, 30) // 30 a commit: 3,000 fsync'd commits took 7 s
	for i := 0; i < 100; i++ {
		require.NoError(t, r.em.Emit(context.Background(), batch...))
	}
	require.Eventually(t, func() bool {
		return r.logs.count(slog.LevelWarn, "spool full: oldest events dropped to make room") == 1
	}, 5*time.Second, 10*time.Millisecond, "the first drops are logged at once, from the outage loop")
	require.NoError(t, r.em.Close(context.Background()))
	require.LessOrEqual(t, r.logs.count(slog.LevelWarn, "spool full: oldest events dropped to make room"), 2)
	total, ok := r.logs.attr("spool full: oldest events dropped to make room", "dropped_total")
	require.True(t, ok)
	require.NotZero(t, total.Uint64())
}

// AtOpen is the backlog as Open found it, whatever the drainer delivered
// since: the CLI's "replaying backlog" line reported Stats read a moment
// after Open, which missed the events already delivered by then (168 of
// 10,500 in one CI run of TestRunLogsReplayProgress).
func TestAtOpenIsTheBacklogBeforeDelivery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock, spool := dir+"/r.sock", dir+"/spool"
	em, err := emitter.Open(sock, spool, &emitter.Options{NoSync: true})
	require.NoError(t, err)
	var sent [][]byte
	for _, e := range events("backlog", 500) {
		sent = append(sent, []byte(e))
	}
	require.NoError(t, em.Emit(context.Background(), sent...))
	em.Close(context.Background()) // no receiver: all 500 stay spooled

	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	em, err = emitter.Open(sock, spool, &emitter.Options{NoSync: true})
	require.NoError(t, err)
	defer em.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, 500))
	require.Eventually(t, func() bool { return em.Stats().Pending < 500 }, 10*time.Second, time.Millisecond)
	at := em.AtOpen()
	require.EqualValues(t, 500, at.PendingEvents, "the backlog at Open, though some of it is delivered now")
	require.EqualValues(t, 1, at.FirstSeq)
	require.EqualValues(t, 500, at.LastSeq)
}
