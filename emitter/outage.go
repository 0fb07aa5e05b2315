package emitter

import (
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
)

// outage keeps the logs of a receiver outage quiet: one warning when it
// starts, then at most one per interval, and one info line when it ends.
type outage struct {
	addr     string
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex // guards start, read by Stats
	start    time.Time
	lastWarn time.Time
	failures int
}

// down records a failure. since, when not zero, is when delivery really
// stopped (a stalled receiver's last read), which starts the outage.
func (o *outage) down(err error, pending func() uint64, since time.Time) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
	switch {
	case o.start.IsZero():
		o.start, o.lastWarn = now, now
		if !since.IsZero() && since.Before(now) {
			o.start = since
		}
		o.log.Warn("receiver unreachable; spooling events until it is back",
			"addr", o.addr, "error", err.Error(), "error_class", sockwait.Classify(err), "pending_events", pending())
	case now.Sub(o.lastWarn) >= o.interval:
		o.lastWarn = now
		o.log.Warn("receiver still unreachable",
			"addr", o.addr, "down_for", now.Sub(o.start).Round(time.Millisecond).String(), "failures", o.failures,
			"error", err.Error(), "error_class", sockwait.Classify(err), "pending_events", pending())
	}
}

func (o *outage) up(pending func() uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.start.IsZero() {
		return
	}
	o.log.Info("receiver reachable again",
		"addr", o.addr, "outage", time.Since(o.start).Round(time.Millisecond).String(),
		"failures", o.failures, "events_held_back", pending())
	o.start, o.failures = time.Time{}, 0
}

func (o *outage) started() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.start
}
