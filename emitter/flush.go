package emitter

import (
	"context"
	"fmt"
	"time"
)

// flushPoll is how often Flush looks at the spool: events also leave it in
// ways that wake nobody (drops, expiry).
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
	before := e.Stats()
	target := before.Spool.LastSeq
	// Count pending events, not sequence numbers, which may have holes.
	waited := before.Spool.PendingEvents
	e.link.notify() // a write sent inline is looked at now, not at the idle's next look
	tick := e.opts.Clock.NewTimer(flushPoll)
	defer tick.Stop()
	var settle time.Time
	for {
		e.link.pub.mu.Lock()
		progress := e.link.pub.progress.watch()
		e.link.pub.mu.Unlock()
		if first := e.spool.FirstSeq(); first == 0 || first > target {
			// The counters lag the spool a moment: wait for them, so that
			// a dead letter is not reported as a delivery.
			after := e.Stats()
			if settle.IsZero() {
				settle = e.opts.Clock.Now().Add(flushSettle)
			}
			// Every waited-for event explained, or the counters had their time.
			gone := (after.Delivered - before.Delivered) + (after.Unproven - before.Unproven) +
				(after.Spool.DroppedOldest.Events - before.Spool.DroppedOldest.Events) +
				(after.Expired - before.Expired) + (after.DeadLettered - before.DeadLettered)
			if gone >= waited || e.opts.Clock.Now().After(settle) {
				return flushResult(waited, before, after)
			}
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

// flushSettle bounds how long Flush waits for the counters of events that
// already left the spool.
const flushSettle = time.Second

// flushResult sorts the waited-for events by what became of them: what left
// the spool undelivered is counted from the head, where those events were.
func flushResult(waited uint64, before, after Stats) error {
	r := &FlushError{Waited: waited}
	take := func(n uint64) uint64 { return min(n, waited-r.Dropped-r.Expired-r.DeadLettered-r.Unproven) }
	r.Dropped = take(after.Spool.DroppedOldest.Events - before.Spool.DroppedOldest.Events)
	r.Expired = take(after.Expired - before.Expired)
	r.DeadLettered = take(after.DeadLettered - before.DeadLettered)
	r.Unproven = take(after.Unproven - before.Unproven)
	r.Delivered = waited - r.Dropped - r.Expired - r.DeadLettered - r.Unproven
	if r.Delivered == waited {
		return nil
	}
	return r
}
