package emitter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/internal/verify"
)

// lockedBuffer is a bytes.Buffer safe for the echo and the test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Promise 1: stdout gets every event, even one emitted after Close.
func TestEmitAfterCloseEchoes(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	r := newRig(t, nil, &emitter.Options{Stdout: &out})
	require.NoError(t, r.em.Close(context.Background()))
	err := r.em.Emit(context.Background(), []byte("late event"))
	require.ErrorIs(t, err, emitter.ErrClosed)
	require.Equal(t, "late event\n", out.String(), "an event emitted after Close is still echoed")
	require.EqualValues(t, 1, r.em.Stats().SpoolErrors, "and counted as not spooled")
	require.EqualValues(t, 1, r.em.Stats().Lost())
}

// A second Close that comes while the first is still stopping a stuck
// drainer waits for it and returns its result, not nil at once.
func TestSecondCloseWaitsForFirst(t *testing.T) {
	t.Parallel()
	release, dialing := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(func() { close(release) })
	stuck := func(context.Context, string, string) (net.Conn, error) {
		dialing <- struct{}{}
		<-release // a dial no context reaches
		return nil, errors.New("released")
	}
	r := newRig(t, nil, &emitter.Options{Dial: stuck})
	<-dialing // the drainer is stuck in it
	firstDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		firstDone <- r.em.Close(ctx)
	}()
	require.Eventually(t, func() bool {
		return errors.Is(r.em.Emit(context.Background(), []byte("x")), emitter.ErrClosed)
	}, 5*time.Second, time.Millisecond, "the first Close has begun")
	second := r.em.Close(context.Background())
	require.Error(t, second, "the second Close waited for the first, which found the drainer stuck")
	first := <-firstDone
	require.Error(t, first, "the drainer was stuck: the first Close reports it")
	require.Equal(t, first, second, "the second Close returns the first's result")
}

// Flush returns once what it waited for has left the spool, here dropped by
// the full-spool policy while the receiver is away, and says so.
func TestFlushReturnsWhenEventsDropped(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{MaxSpoolBytes: 1 << 20})
	r.emitAll(events("doomed", 10))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	flushed := make(chan error, 1)
	go func() { flushed <- r.em.Flush(ctx) }()
	big := bytes.Repeat([]byte("d"), 1000)
	batch := make([][]byte, 10) // 3 MiB in all through a 1 MiB spool, 10 a commit
	for i := range batch {
		batch[i] = big
	}
	for i := 0; i < 300; i++ {
		require.NoError(t, r.em.Emit(context.Background(), batch...))
	}
	err := <-flushed
	require.NotErrorIs(t, err, context.DeadlineExceeded, "Flush must not wait for its context once its events are gone")
	require.ErrorIs(t, err, emitter.ErrNotDelivered)
	var fe *emitter.FlushError
	require.ErrorAs(t, err, &fe)
	// The Flush goroutine may start after the first big event.
	require.GreaterOrEqual(t, fe.Waited, uint64(10))
	require.Equal(t, emitter.FlushError{Waited: fe.Waited, Dropped: fe.Waited}, *fe)
}

// Close is bounded by its context even when it lands between two chunks of
// a write: the deadline the drainer then sets for the next chunk must not
// undo the past deadline Close set to interrupt it.
func TestCloseBoundedBetweenChunks(t *testing.T) {
	t.Parallel()
	rcv, addr := startPaused(t, "unix", nil)
	defer rcv.Close()
	var em *emitter.Emitter
	closed := make(chan error, 1)
	sc := &stallConn{interrupted: make(chan struct{}), closeNow: func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			closed <- em.Close(ctx)
		}()
	}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		sc.Conn = c
		return sc, err
	}
	em, err := emitter.Open(addr, filepath.Join(t.TempDir(), "spool"), &emitter.Options{
		NoSync: true, Stdout: &lockedBuffer{}, WriteTimeout: 4 * time.Second, Dial: dial})
	require.NoError(t, err)
	// Two chunks: Close comes as the drainer arms the second one.
	require.NoError(t, em.Emit(context.Background(), bytes.Repeat([]byte("a"), 6000), bytes.Repeat([]byte("b"), 6000)))
	require.NoError(t, <-closed, "the drainer must stop within Close's context")
}

// stallConn is a connection on which the second write blocks until its
// deadline, as one to a receiver that stopped reading does; as the drainer
// arms that write, it calls closeNow and waits for Close's past deadline
// to arrive first.
type stallConn struct {
	net.Conn
	closeNow    func()
	interrupted chan struct{} // closed when a past deadline was set
	mu          sync.Mutex
	writes      int
	deadline    time.Time
	changed     chan struct{}
}

func (c *stallConn) SetDeadline(t time.Time) error      { return c.setDeadline(t) }
func (c *stallConn) SetWriteDeadline(t time.Time) error { return c.setDeadline(t) }

func (c *stallConn) setDeadline(t time.Time) error {
	c.mu.Lock()
	if t.Before(time.Now()) {
		select {
		case <-c.interrupted:
		default:
			close(c.interrupted)
		}
	} else if c.writes == 1 {
		c.mu.Unlock()
		c.closeNow()
		<-c.interrupted // Close's past deadline comes first; this one lands after it
		c.mu.Lock()
	}
	c.deadline = t
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return nil
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	if c.writes == 1 {
		c.mu.Unlock()
		return len(p), nil
	}
	for {
		d, changed := c.deadline, c.changed
		c.mu.Unlock()
		if !d.IsZero() && !time.Now().Before(d) {
			return 0, os.ErrDeadlineExceeded
		}
		timer := time.NewTimer(time.Until(d))
		select {
		case <-timer.C:
		case <-changed:
		}
		timer.Stop()
		c.mu.Lock()
	}
}

// No torn line reaches a receiver that stays alive when a blocked write is
// abandoned by Close (before or after a stall past StallTimeout), on TCP (which takes
// partial writes) and on Unix sockets with lines over half the send buffer.
// TCP after a stall runs in make torture only: 12 MiB through a receiver
// stopped past StallTimeout takes tens of seconds under -race, and the
// abandoned write is the same as without the stall (tcp, stall=false) and
// as after a stall on a Unix socket (unix, stall=true).
func TestNoTornLineWhenWriteAbandoned(t *testing.T) {
	t.Parallel() // its receivers are paused, then read to the end: no timing to disturb
	for _, tc := range []struct {
		network string
		size    int // of each line
		total   int // bytes emitted
		stall   bool
	}{
		{"tcp", 1000, 12 << 20, false},
		{"tcp", 1000, 12 << 20, true},
		{"unix", 150 << 10, 2 << 20, false},
		{"unix", 150 << 10, 2 << 20, true},
	} {
		name := fmt.Sprintf("%s/%d/stall=%v", tc.network, tc.size, tc.stall)
		t.Run(name, func(t *testing.T) {
			if tc.network == "tcp" && tc.stall && !testmode.Long() {
				t.Skip("12 MiB over TCP past a stall: make torture (EVSPOOL_TORTURE=long)")
			}
			t.Parallel()
			rcv, addr := startPaused(t, tc.network, &refrecv.Options{MaxLine: 256 << 10})
			defer rcv.Close()
			opts := &emitter.Options{Network: tc.network, NoSync: true, Stdout: &lockedBuffer{},
				MaxEventSize: 256 << 10, MaxSpoolBytes: 512 << 20,
				// Batches larger than the socket buffers, so the drainer
				// blocks in a write rather than waiting for consumption.
				BatchEvents: 1 << 20, BatchBytes: 64 << 20,
				WriteTimeout: 100 * time.Millisecond, StallTimeout: time.Minute}
			if tc.stall {
				opts.StallTimeout = 300 * time.Millisecond
			}
			em, err := emitter.Open(addr, filepath.Join(t.TempDir(), "spool"), opts)
			require.NoError(t, err)
			defer em.Close(context.Background())
			// More than the socket buffers hold (TCP on loopback: several
			// MiB each side), emitted at once so the first batch is all of it.
			pad := strings.Repeat("p", tc.size)
			sent := make([]string, tc.total/tc.size)
			batch := make([][]byte, len(sent))
			for i := range sent {
				sent[i] = fmt.Sprintf("%08d %s", i, pad)
				batch[i] = []byte(sent[i])
			}
			require.NoError(t, em.Emit(context.Background(), batch...))
			require.Eventually(t, func() bool {
				if tc.stall {
					return !em.Stats().OutageStart.IsZero() // frozen past StallTimeout: kept
				}
				return em.Stats().Stalls > 0 // blocked in a write
			}, 20*time.Second, time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			require.NoError(t, em.Close(ctx))
			rcv.ResumeReading()
			require.Eventually(t, func() bool { return rcv.Conns() == 0 }, 20*time.Second, time.Millisecond,
				"the receiver reads to the end of every connection")
			var torn []string
			for _, l := range rcv.Lines() {
				if len(l) != len(sent[0]) {
					torn = append(torn, fmt.Sprintf("%d bytes: %.20q", len(l), l))
				}
			}
			require.Empty(t, torn, "lines cut short at the receiver")
			res := verify.Check(sent, rcv.Lines())
			require.Zero(t, res.Foreign, res.String())
		})
	}
}

// startPaused starts a receiver that reads nothing until ResumeReading.
func startPaused(t *testing.T, network string, opts *refrecv.Options) (*refrecv.Receiver, string) {
	t.Helper()
	addr := filepath.Join(t.TempDir(), "s.sock")
	if network == "tcp" {
		addr = "127.0.0.1:0"
	}
	rcv, err := refrecv.Start(network, addr, opts)
	require.NoError(t, err)
	rcv.PauseReading()
	return rcv, rcv.Addr()
}
