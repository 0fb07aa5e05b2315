package emitter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/evspool/evspool/wal"
)

var (
	// ErrNotAlive is matched by what Alive returns when the drainer has
	// stopped or is wedged.
	ErrNotAlive = errors.New("emitter: not alive")
	// ErrNotReady is matched by what Ready returns when the spool cannot
	// take events.
	ErrNotReady = errors.New("emitter: not ready")
)

// health is what Alive and Ready read: the drainer's heartbeat and the
// outcome of the last spool commit.
type health struct {
	clk        Clock
	base       time.Time    // the clock's reading at start: times are kept as offsets from it
	lastBeat   atomic.Int64 // since base, ns; 0: none yet
	idling     atomic.Bool  // waiting for work, not stuck in a call
	commitErr  atomic.Pointer[string]
	commitErrT atomic.Int64
}

// since is the time since base. Now and Sub, not Boot: the system clock's
// Now carries a monotonic reading and costs no system call, and beat runs
// several times an event.
func (h *health) since() time.Duration { return h.clk.Now().Sub(h.base) }

func (h *health) beat() { h.lastBeat.Store(int64(h.since())) }

// idle marks the drainer waiting for work, which is not being wedged however
// long it lasts, or back from that wait.
func (h *health) idle(on bool) {
	h.beat()
	h.idling.Store(on)
}

// noteCommit records the outcome of a commit Emit made. A full spool or a
// caller's context ending is the policy at work, not a broken spool.
func (h *health) noteCommit(err error) {
	switch {
	case err == nil:
		if h.commitErr.Load() != nil {
			h.commitErr.Store(nil)
		}
	case !errors.Is(err, wal.ErrFull) && !errors.Is(err, wal.ErrTooLarge) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		msg := err.Error()
		h.commitErr.Store(&msg)
		h.commitErrT.Store(int64(h.since()))
	}
}

// Alive returns nil while the drainer runs and is not wedged: it took a step
// within twice Options.StallTimeout, or it waits for work, on the Preamble
// or through a Hold. An outage is not a failure. After Close, or when the
// drainer is stuck in a call no deadline reaches, it returns an error
// matching ErrNotAlive. For a liveness probe (/healthz).
func (e *Emitter) Alive() error {
	select {
	case <-e.link.done:
		return fmt.Errorf("%w: the drainer has stopped (emitter closed)", ErrNotAlive)
	default:
	}
	if e.link.pub.pre.running.Load() || e.Held() || e.link.pub.health.idling.Load() {
		return nil
	}
	beat := e.link.pub.health.lastBeat.Load()
	since := e.link.pub.health.since() - time.Duration(beat)
	// Well past the drainer's longest bounded step.
	limit := max(2*e.opts.StallTimeout, 2*e.opts.DialTimeout, 2*e.opts.WriteTimeout)
	if beat != 0 && since > limit {
		return fmt.Errorf("%w: the drainer has not moved for %v (limit %v): it is stuck in a write, a dial or the spool",
			ErrNotAlive, since.Round(time.Millisecond), limit)
	}
	return nil
}

// Ready returns nil while the emitter is open, its spool usable and the last
// commit Emit made did not fail (disk full, I/O error); a full spool is not
// unready. Otherwise it returns an error matching ErrNotReady that says why.
// For a readiness probe (/readyz).
func (e *Emitter) Ready() error {
	if e.closed.Load() {
		return fmt.Errorf("%w: %w", ErrNotReady, ErrClosed)
	}
	if err := e.spool.Usable(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if msg := e.link.pub.health.commitErr.Load(); msg != nil {
		ago := e.link.pub.health.since() - time.Duration(e.link.pub.health.commitErrT.Load())
		return fmt.Errorf("%w: the last spool commit failed %v ago: %s", ErrNotReady,
			ago.Round(time.Millisecond), *msg)
	}
	return nil
}
