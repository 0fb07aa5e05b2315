package emitter

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
)

// outage logs a receiver outage: a warning when it starts, then at most one
// per interval, and a line when it ends. A path that is not a socket is
// logged once, as an error.
type outage struct {
	addr string
	log  *slog.Logger

	mu        sync.Mutex // guards start, read by Stats
	start     time.Time
	rep       reporter // this outage's warnings
	failures  int
	notSocket bool // the wrong path was reported
}

// down records a failure; a non-zero since (a frozen receiver's last read)
// is when the outage began.
func (o *outage) down(err error, pending func() uint64, since time.Time) {
	now := o.rep.clk.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
	if o.start.IsZero() {
		o.start = now
		if !since.IsZero() && since.Before(now) {
			o.start = since
		}
	}
	if errors.Is(err, sockwait.ErrNotSocket) {
		if !o.notSocket {
			o.notSocket = true
			o.log.Error("the socket path is not a socket; spooling events until a receiver listens there",
				"addr", o.addr, "error", err.Error(), "error_class", sockwait.Classify(err), "pending_events", pending())
		}
		return
	}
	o.notSocket = false
	first := o.rep.last.IsZero()
	if !o.rep.occurred() {
		return
	}
	o.rep.take()
	if first {
		o.log.Warn("receiver unreachable; spooling events until it is back",
			"addr", o.addr, "error", err.Error(), "error_class", sockwait.Classify(err), "pending_events", pending())
	} else {
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
		"addr", o.addr, "outage", o.rep.clk.Now().Sub(o.start).Round(time.Millisecond).String(),
		"failures", o.failures, "events_held_back", pending())
	o.start, o.rep, o.failures, o.notSocket = time.Time{}, reporter{clk: o.rep.clk, interval: o.rep.interval}, 0, false
}

func (o *outage) started() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.start
}
