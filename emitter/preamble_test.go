package emitter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

const liveStart = "CMD LIVE_START"

// within receives from ch, failing the test if nothing comes in 5 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing within 5 s", what)
	}
	var zero T
	return zero
}

func writeLiveStart(_ context.Context, w io.Writer) error {
	_, err := fmt.Fprintln(w, liveStart)
	return err
}

// firstLines returns the first line received on each connection, by
// connection number.
func firstLines(rcv *refrecv.Receiver) map[int]string {
	first := map[int]string{}
	for _, l := range rcv.Received() {
		if _, ok := first[l.Conn]; !ok {
			first[l.Conn] = l.Data
		}
	}
	return first
}

// The preamble comes first on every connection, before anything spooled,
// and is neither echoed nor spooled.
func TestPreambleFirstOnEveryConnection(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Preamble: writeLiveStart, Stdout: &out})
	first := events("first", 100)
	r.emitAll(first)
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, len(first)+1)

	require.NoError(t, r.rcv.Kill())
	second := events("second", 100)
	r.emitAll(second)
	require.NoError(t, r.rcv.Restart())
	r.flush(10 * time.Second)

	// Read (so acknowledged) a moment before recorded: wait for the record.
	sent := append(first, second...)
	received := func() []string {
		var evs []string
		for _, l := range r.rcv.Lines() {
			if l != liveStart {
				evs = append(evs, l)
			}
		}
		return evs
	}
	require.Eventually(t, func() bool { return verify.Check(sent, received()).Missing == 0 },
		5*time.Second, time.Millisecond, "%v", verify.Check(sent, received()))
	requireDelivered(t, sent, received())
	fl := firstLines(r.rcv)
	require.GreaterOrEqual(t, len(fl), 2, "a second connection was made")
	for conn, l := range fl {
		require.Equal(t, liveStart, l, "connection %d", conn)
	}
	require.NotContains(t, out.String(), liveStart, "never echoed")
	st := r.em.Stats()
	require.EqualValues(t, 200, st.Emitted, "never spooled")
	require.Zero(t, st.PreambleErrors)
}

// The preamble may wait past the dial timeout (for the receiver to finish its
// replay): its context ends with the emitter, nothing spooled is sent
// meanwhile, and the wait is neither a dial error nor an outage.
func TestPreambleMayWait(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	entered := make(chan bool, 1)
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		DialTimeout: 10 * time.Millisecond,
		Preamble: func(ctx context.Context, w io.Writer) error {
			_, bounded := ctx.Deadline()
			entered <- bounded
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			return writeLiveStart(ctx, w)
		},
	})
	require.False(t, within(t, entered, "preamble called"), "the preamble's context has no dial deadline")
	sent := events("waited", 50)
	r.emitAll(sent)
	require.Zero(t, r.rcv.Count(), "nothing is sent before the preamble")
	close(gate)
	r.flush(5 * time.Second)
	lines := waitLines(t, r.rcv, len(sent)+1)
	require.Equal(t, append([]string{liveStart}, sent...), lines)
	st := r.em.Stats()
	require.Zero(t, st.DialErrors)
	require.Zero(t, st.Reconnects)
	require.Zero(t, r.logs.count(slog.LevelWarn, "receiver unreachable; spooling events until it is back"))
}

// A failing preamble fails the connection: counted, logged once, redialled
// after a backoff; nothing spooled was sent on the failed connections.
func TestPreambleFailureRedials(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		Preamble: func(ctx context.Context, w io.Writer) error {
			switch calls.Add(1) {
			case 1, 2:
				return errors.New("replay not finished")
			case 3:
				panic("a bug in the hook") // fails the connection, not the process
			}
			return writeLiveStart(ctx, w)
		},
	})
	sent := events("after", 20)
	r.emitAll(sent)
	r.flush(10 * time.Second)
	require.Equal(t, append([]string{liveStart}, sent...), waitLines(t, r.rcv, len(sent)+1))
	st := r.em.Stats()
	require.EqualValues(t, 3, st.PreambleErrors)
	require.EqualValues(t, 4, calls.Load())
	require.EqualValues(t, 4, r.rcv.Accepted())
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "connection preamble failed; reconnecting"), "rate-limited")
	require.Contains(t, st.LastError, "preamble panicked: a bug in the hook")
	v, ok := r.logs.attr("connection preamble failed; reconnecting", "error")
	require.True(t, ok)
	require.Contains(t, v.String(), "replay not finished")
}

// Close interrupts a preamble that waits.
func TestCloseDuringPreamble(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		Preamble: func(ctx context.Context, w io.Writer) error {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	within(t, entered, "preamble called")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.em.Close(ctx))
	require.Zero(t, r.em.Stats().PreambleErrors, "closing is not a preamble failure")
}

// waitGate waits, as a daemon's live gate does, until open returns true.
func waitGate(ctx context.Context, open func() bool) error {
	for !open() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// The reproduction: before Options.Preamble, the only place to wait
// for the receiver's replay was Options.Dial, bounded by the dial timeout, so
// the wait was counted as dial errors and logged as an outage. The preamble
// waits the same time with neither.
func TestGateWaitInDialVersusPreamble(t *testing.T) {
	t.Parallel()
	const wait, dialTimeout = time.Second, 200 * time.Millisecond
	type result struct{ dialErrors, warnings int }
	measure := func(opts *emitter.Options) result {
		r := newRig(t, &refrecv.Options{}, opts)
		r.emitAll(events("gated", 10))
		r.flush(10 * time.Second)
		require.Equal(t, liveStart, waitLines(t, r.rcv, 11)[0])
		st := r.em.Stats()
		require.NoError(t, r.em.Close(context.Background()))
		return result{int(st.DialErrors), r.logs.count(slog.LevelWarn, "receiver unreachable; spooling events until it is back")}
	}

	// The wait runs from the hook's first call, not from the rig's start,
	// which a loaded machine can delay by most of it.
	var first atomic.Int64
	open := func() bool {
		first.CompareAndSwap(0, time.Now().UnixNano())
		return time.Since(time.Unix(0, first.Load())) > wait
	}
	var d net.Dialer
	inDial := measure(&emitter.Options{DialTimeout: dialTimeout,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := waitGate(ctx, open); err != nil {
				return nil, err
			}
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				_, err = fmt.Fprintln(c, liveStart)
			}
			return c, err
		}})
	t.Logf("gate wait %v in Options.Dial (dial timeout %v): %d dial errors, %d outage warnings", wait, dialTimeout, inDial.dialErrors, inDial.warnings)
	require.GreaterOrEqual(t, inDial.dialErrors, 3)
	require.Equal(t, 1, inDial.warnings)

	first.Store(0)
	inPreamble := measure(&emitter.Options{DialTimeout: dialTimeout,
		Preamble: func(ctx context.Context, w io.Writer) error {
			if err := waitGate(ctx, open); err != nil {
				return err
			}
			return writeLiveStart(ctx, w)
		}})
	t.Logf("gate wait %v in Options.Preamble: %d dial errors, %d outage warnings", wait, inPreamble.dialErrors, inPreamble.warnings)
	require.Equal(t, result{}, inPreamble)
}

// The hook's writer is for the hook's call only: kept and used later, it
// fails instead of writing into a stream the drainer owns.
func TestPreambleWriterAfterReturn(t *testing.T) {
	t.Parallel()
	kept := make(chan io.Writer, 1)
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		Preamble: func(ctx context.Context, w io.Writer) error {
			select {
			case kept <- w:
			default:
			}
			return writeLiveStart(ctx, w)
		},
	})
	w := within(t, kept, "preamble called")
	r.emitAll([]string{"event"})
	r.flush(5 * time.Second)
	_, err := io.WriteString(w, "late\n")
	require.ErrorContains(t, err, "after the preamble returned")
	require.Equal(t, []string{liveStart, "event"}, waitLines(t, r.rcv, 2))
}
