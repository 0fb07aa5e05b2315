package emitter

import (
	"context"
	"fmt"
	"time"
)

// flushPoll is how often Flush looks at the spool besides the drainer's
// acknowledgements: events also leave it by the full-spool policy, expiry
// and dead-lettering, which wake nobody.
const flushPoll = 10 * time.Millisecond

// FlushError is what Flush returns when every event it waited for has left
// the spool but not all of them reached the receiver. It matches
// ErrNotDelivered. The counts come from the emitter's counters over the
// Flush, so events emitted during it may blur them; the sum of the four is
// Waited.
type FlushError struct {
	Waited       uint64 // events Flush waited for
	Delivered    uint64 // of them, acknowledged by the receiver
	Dropped      uint64 // dropped by the full-spool policy
	Expired      uint64 // dropped for exceeding the maximum age
	DeadLettered uint64 // moved to the dead-letter file
}

func (e *FlushError) Error() string {
	return fmt.Sprintf("emitter: flush: of %d events, %d delivered, %d dropped (spool full), %d expired, %d dead-lettered",
		e.Waited, e.Delivered, e.Dropped, e.Expired, e.DeadLettered)
}

// Is reports whether target is ErrNotDelivered.
func (e *FlushError) Is(target error) bool { return target == ErrNotDelivered }

// Flush returns once every event emitted before it was called has left the
// spool, or ctx ends. A delivered event leaves the spool once the receiver
// has read it and it is out of the replay window (see Options.ReplayWindow):
// with a receiver that stays connected, at most ReplayLinger after the
// receiver read the last event. It returns nil when all of them were delivered; a
// *FlushError (matching ErrNotDelivered) saying how many were delivered,
// dropped, expired or dead-lettered when some were not; an error matching
// ctx.Err() with the count still pending when ctx ended first; ErrClosed
// after Close.
func (e *Emitter) Flush(ctx context.Context) error {
	if e.closed.Load() {
		return ErrClosed
	}
	before := e.Stats()
	target := before.Spool.LastSeq
	// Every pending event is at or below target: count them, not the
	// numbers between the first and the last, which may hold holes (salvage
	// resumes numbering above its reservation) that no event fills.
	waited := before.Spool.PendingEvents
	tick := e.opts.Clock.NewTimer(flushPoll)
	defer tick.Stop()
	var settle time.Time
	for {
		progress := e.d.progressCh()
		if first := e.spool.FirstSeq(); first == 0 || first > target {
			// The drainer counts what became of an event just after it
			// left the spool: give the counters a moment to catch up, so a
			// dead letter or an expiry is not reported as a delivery.
			after := e.Stats()
			if settle.IsZero() {
				settle = e.opts.Clock.Now().Add(flushSettle)
			}
			if accounted(waited, before, after) || e.opts.Clock.Now().After(settle) {
				return flushResult(waited, before, after)
			}
		}
		tick.Reset(flushPoll)
		select {
		case <-progress:
		case <-tick.C():
		case <-e.d.done:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("emitter: flush: %d events still pending: %w", e.spool.Len(), ctx.Err())
		}
	}
}

// flushSettle bounds how long Flush waits for the counters of events that
// already left the spool.
const flushSettle = time.Second

// accounted reports whether the counters explain every waited-for event.
func accounted(waited uint64, before, after Stats) bool {
	n := (after.Delivered - before.Delivered) + (after.Spool.DroppedOldest.Events - before.Spool.DroppedOldest.Events) +
		(after.Expired - before.Expired) + (after.DeadLettered - before.DeadLettered)
	return n >= waited
}

// flushResult sorts the waited-for events by what became of them: what left
// the spool undelivered is counted from the head, where those events were.
func flushResult(waited uint64, before, after Stats) error {
	r := &FlushError{Waited: waited}
	take := func(n uint64) uint64 {
		n = min(n, waited-r.Dropped-r.Expired-r.DeadLettered)
		return n
	}
	r.Dropped = take(after.Spool.DroppedOldest.Events - before.Spool.DroppedOldest.Events)
	r.Expired = take(after.Expired - before.Expired)
	r.DeadLettered = take(after.DeadLettered - before.DeadLettered)
	r.Delivered = waited - r.Dropped - r.Expired - r.DeadLettered
	if r.Delivered == waited {
		return nil
	}
	return r
}
