package emitter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

func TestMain(m *testing.M) {
	refrecv.MaybeRunCEP()     // a receiver child of the poison tests
	refrecv.MaybeRunPreFork() // a pre-fork receiver's master and workers
	goleak.VerifyTestMain(m)
}

// rig is a receiver and an emitter on temporary paths.
type rig struct {
	t     *testing.T
	sock  string
	spool string
	rcv   *refrecv.Receiver
	em    *emitter.Emitter
	logs  *logSink
}

func newRig(t *testing.T, rcvOpts *refrecv.Options, opts *emitter.Options) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, sock: filepath.Join(dir, "events.sock"), spool: filepath.Join(dir, "spool"), logs: &logSink{}}
	if rcvOpts != nil {
		rcv, err := refrecv.Start("unix", r.sock, rcvOpts)
		require.NoError(t, err)
		r.rcv = rcv
		t.Cleanup(func() { rcv.Close() })
	}
	r.open(opts)
	return r
}

func (r *rig) open(opts *emitter.Options) {
	r.t.Helper()
	o := emitter.Options{}
	if opts != nil {
		o = *opts
	}
	o.NoSync = true // durability across a power loss is not under test here
	if o.ReplayLinger == 0 {
		// The refrecv receiver records a line as it reads it: the window's
		// linger only slows Flush down here (window tests set their own).
		o.ReplayLinger = 20 * time.Millisecond
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	o.Logger = slog.New(r.logs)
	em, err := emitter.Open(r.sock, r.spool, &o)
	require.NoError(r.t, err)
	r.em = em
	r.t.Cleanup(func() { em.Close(context.Background()) })
}

func events(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s event %06d ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 path delay 91", prefix, i)
	}
	return out
}

func (r *rig) emitAll(evs []string) {
	r.t.Helper()
	for _, ev := range evs {
		require.NoError(r.t, r.em.Emit(context.Background(), []byte(ev)))
	}
}

func (r *rig) flush(d time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	require.NoError(r.t, r.em.Flush(ctx), "stats: %+v", r.em.Stats())
}

// flushUnproven is flush for a connection whose reads cannot be seen (a
// Dial that wraps the socket): every event leaves the spool unproven, and
// Flush says so for those it waited for (none if all had left already).
func (r *rig) flushUnproven(d time.Duration, emitted int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := r.em.Flush(ctx); err != nil {
		require.ErrorIs(r.t, err, emitter.ErrUnproven, "stats: %+v", r.em.Stats())
		require.NotErrorIs(r.t, err, emitter.ErrNotDelivered)
	}
	st := r.em.Stats()
	require.Zero(r.t, st.Delivered, "nothing proven")
	require.EqualValues(r.t, emitted, st.Unproven)
}

// waitLines waits until rcv has recorded at least n lines: an event counts as
// consumed once the receiver read it from the socket, a moment before it
// records the line.
func waitLines(t *testing.T, rcv *refrecv.Receiver, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, n), "received %d of %d", rcv.Count(), n)
	return rcv.Lines()
}

// waitDelivered waits until rcv has every event of sent (duplicates make a
// count unreliable), then checks the delivery promise.
func waitDelivered(t *testing.T, rcv *refrecv.Receiver, sent []string) verify.Result {
	t.Helper()
	var res verify.Result
	require.Eventually(t, func() bool {
		res = verify.Check(sent, rcv.Lines())
		return res.Missing == 0
	}, 10*time.Second, 2*time.Millisecond, "still missing: %v", &res)
	return requireDelivered(t, sent, rcv.Lines())
}

func requireDelivered(t *testing.T, sent, got []string) verify.Result {
	t.Helper()
	res := verify.Check(sent, got)
	require.True(t, res.OK(), res.String())
	return res
}

// logSink is a slog.Handler that keeps records for assertions.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSink) WithGroup(string) slog.Handler      { return l }

// count returns how many records at level have msg.
func (l *logSink) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}

func (l *logSink) attr(msg, key string) (slog.Value, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.Message != msg {
			continue
		}
		var v slog.Value
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v, found = a.Value, true
				return false
			}
			return true
		})
		if found {
			return v, true
		}
	}
	return slog.Value{}, false
}
