package delivery

import (
	"slices"
	"time"
)

// How often the caller looks at a connection is delivery's, one policy:
// pollAfter while it waits for a read or for room, idleCheck while it idles
// beside a receiver that needs looking at (Park), and Wake for the clock's
// next judgement. The caller waits the pause it is given, nothing more.

// idleCheck is how often the caller looks again at a frozen receiver, and
// at one it idles beside while something pending needs it.
const idleCheck = 100 * time.Millisecond

// firstLook is the first pause after a write: a receiver that reads at once
// is seen within microseconds.
const firstLook = 50 * time.Microsecond

// quickLook is the shortest pause between two looks once a receiver has
// been quiet a while.
const quickLook = 2 * time.Millisecond

// pollAfter is the pause before the next look at a receiver that has not
// read for quiet (or has waited for room that long): as long as the quiet
// (the pauses double from firstLook), up to quickLook or a tenth of the
// quiet, whichever is longer, and never more than idleCheck. A receiver
// that stopped reading is looked at less and less often.
func pollAfter(quiet time.Duration) time.Duration {
	return min(max(quiet, firstLook), max(quiet/10, quickLook), idleCheck)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// idlePlan is what the caller's idle, as last planned (Park), waits for.
type idlePlan struct {
	looks  bool      // it looks at the socket after idleCheck
	wakeAt time.Time // it wakes for the clock then; zero: never
}

// park plans the caller's idle: a look after idleCheck while the gate is
// held, the receiver has bytes unread or is frozen, a hang-up cannot be
// watched, or acknowledgements wait to be committed; a wake at Wake.
func (d *Delivery) park(f IdleFacts) {
	d.idle = idlePlan{looks: f.Holding || d.needsLook(f)}
	if d.idle.looks {
		d.rd.Look = idleCheck
	}
	if wake, ok := d.wakeAt(); ok {
		d.idle.wakeAt = wake
	}
}

func (d *Delivery) needsLook(f IdleFacts) bool {
	if c := d.conn; c != nil && (c.frozen || c.unread > 0) {
		return true
	}
	return f.Unwatched || f.AcksPending
}

// recheck says whether the idle must be planned again after another
// goroutine acted: it needs a look (the receiver has not read it all, say)
// and has none planned, or the clock's next judgement comes before its
// wake. A look planned is soon enough for a write still unread: the next
// send looks first. Else a planned look is put off (Look): it is for after
// the last activity.
func (d *Delivery) recheck(f IdleFacts) {
	reading := d.conn != nil && !d.conn.allRead()
	wake, wakes := d.wakeAt()
	switch {
	case (reading || d.needsLook(f)) && !d.idle.looks,
		wakes && (d.idle.wakeAt.IsZero() || d.idle.wakeAt.After(wake)):
		d.rd.Replan = true
	case d.idle.looks:
		d.rd.Look = idleCheck
	}
}

// Room judges a wait for room in the send buffer, begun at since: it goes
// on, looking again after look (pollAfter), up to WriteTimeout; then
// timedOut: stop waiting and look at the receiver.
func (d *Delivery) Room(now, since time.Time) (look time.Duration, timedOut bool) {
	waited := now.Sub(since)
	if waited > d.cfg.WriteTimeout {
		return 0, true
	}
	return pollAfter(waited), false
}

// wakeAt is when tick has something to do next: a stall threshold not yet
// passed, or the oldest line read but not known handled reaching linger.
func (d *Delivery) wakeAt() (time.Time, bool) {
	c := d.conn
	if c == nil {
		return time.Time{}, false
	}
	if !c.allRead() || c.partial {
		var next [3]time.Duration
		n := 0
		if !c.slow {
			next[n], n = d.cfg.WarnAfter, n+1
		}
		if c.partial {
			next[n], n = d.cfg.StuckAfter, n+1
		}
		if !c.frozen {
			next[n], n = d.cfg.StallAfter, n+1
		}
		if n == 0 {
			return time.Time{}, false // frozen: the caller looks for reads
		}
		return c.lastMove.Add(slices.Min(next[:n])), true
	}
	hold, held := d.isolationHold(time.Time{}) // the time only
	for _, l := range c.lines {
		if !l.witness && !l.readAt.IsZero() && d.cfg.Linger > 0 {
			at := l.readAt.Add(d.cfg.Linger)
			if held && hold.Before(at) {
				at = hold
			}
			return at, true
		}
	}
	return hold, held
}
