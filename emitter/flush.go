package emitter

import (
	"context"
	"fmt"
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// flushPoll is how often Flush looks at the spool: events also leave it in
// ways that wake nobody (drops).
const flushPoll = 10 * time.Millisecond

// Flush returns once every event emitted before it was called has left the
// spool (a delivered one, at most ReplayLinger after it was read), or ctx
// ends. It returns nil when all were delivered, a *FlushError when some were
// not or were acknowledged without proof of handling (over TCP: see
// Stats.Unproven), an error matching ctx.Err() when ctx ended first, and
// ErrClosed after Close.
func (e *Emitter) Flush(ctx context.Context) error {
	if e.closed.Load() {
		return ErrClosed
	}
	// The counts before the spool, and after it below: every event is
	// counted before the spool lets it go, so an event that leaves between
	// the two readings is in neither Waited nor the counts' growth.
	before := e.fates()
	ss := e.spool.Stats()
	target, waited := ss.LastSeq, ss.PendingEvents // events, not sequence numbers: there are holes
	e.link.notify()                                // a write sent inline is looked at now, not at the idle's next look
	tick := e.opts.Clock.NewTimer(flushPoll)
	defer tick.Stop()
	for {
		e.link.pub.mu.Lock()
		progress := e.link.pub.progress.watch()
		e.link.pub.mu.Unlock()
		if first := e.spool.FirstSeq(); first == 0 || first > target {
			return flushResult(waited, before, e.fates())
		}
		tick.Reset(flushPoll)
		select {
		case <-progress:
		case <-tick.C():
		case <-e.link.done:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("emitter: flush: %d events still pending: %w", e.spool.Len(), ctx.Err())
		}
	}
}

// fates are the counts of what became of events that left the spool,
// other than delivered.
type fates struct {
	lost     ledger.Losses
	unproven uint64
}

func (e *Emitter) fates() fates {
	e.link.pub.mu.Lock()
	unproven := e.link.pub.link.unproven
	e.link.pub.mu.Unlock()
	return fates{lost: e.loss.Total(), unproven: unproven}
}

// flushResult sorts the waited-for events by what became of them: each
// way but delivery is counted before the event leaves the spool, so the
// rest were delivered. What left undelivered is counted from the head,
// where those events were.
func flushResult(waited uint64, before, after fates) error {
	r := &FlushError{Waited: waited}
	left := waited
	take := func(n uint64) uint64 {
		n = min(n, left)
		left -= n
		return n
	}
	grew := func(k ledger.Kind) uint64 { return after.lost[k] - before.lost[k] }
	r.Dropped = take(grew(ledger.DroppedOldest))
	r.Expired = take(grew(ledger.Expired))
	r.DeadLettered = take(grew(ledger.DeadLettered))
	r.Unreadable = take(grew(ledger.Unreadable))
	r.Unproven = take(after.unproven - before.unproven)
	r.Delivered = left
	if r.Delivered == waited {
		return nil
	}
	return r
}
