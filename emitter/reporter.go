package emitter

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/sockwait"
)

// reporter is the emitter's use of ledger.Reporter, the one rate limiter
// of repeated warnings. Its user locks it.
type reporter struct{ ledger.Reporter }

func newReporter(o *Options) reporter {
	return reporter{ledger.Reporter{Now: o.Clock.Now, Interval: o.WarnInterval}}
}

// warn logs msg if a report is due (ledger.Reporter.Warn).
func (r *reporter) warn(lg *slog.Logger, msg string, args ...any) { r.Warn(lg, msg, args...) }

// outage reports a receiver outage through its reporter: a warning when it
// starts, then at most one per interval, and a line when it ends. A path
// that is not a socket is logged once, as an error.
type outage struct {
	addr string
	log  *slog.Logger

	mu        sync.Mutex // guards start, read by Stats
	start     time.Time
	rep       reporter
	failures  int
	notSocket bool // the wrong path was reported
}

// down records a failure; a non-zero since (a frozen receiver's last read)
// is when the outage began.
func (o *outage) down(err error, pending func() uint64, since time.Time) {
	now := o.rep.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
	if o.start.IsZero() {
		o.start = now
		if !since.IsZero() && since.Before(now) {
			o.start = since
		}
	}
	attrs := func(more ...any) []any {
		return append([]any{"addr", o.addr, "error", err.Error(), "error_class", sockwait.Classify(err), "pending_events", pending()}, more...)
	}
	if errors.Is(err, sockwait.ErrNotSocket) {
		if !o.notSocket {
			o.notSocket = true
			o.log.Error("the socket path is not a socket; spooling events until a receiver listens there", attrs()...)
		}
		return
	}
	o.notSocket = false
	first := !o.rep.Reported()
	if !o.rep.Occurred() {
		return
	}
	o.rep.Take()
	if first {
		o.log.Warn("receiver unreachable; spooling events until it is back", attrs()...)
	} else {
		o.log.Warn("receiver still unreachable", attrs(
			"down_for", now.Sub(o.start).Round(time.Millisecond).String(), "failures", o.failures)...)
	}
}

func (o *outage) up(pending func() uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.start.IsZero() {
		return
	}
	o.log.Info("receiver reachable again",
		"addr", o.addr, "outage", o.rep.Now().Sub(o.start).Round(time.Millisecond).String(),
		"failures", o.failures, "events_held_back", pending())
	o.start, o.failures, o.notSocket = time.Time{}, 0, false
	o.rep.Reset()
}

func (o *outage) started() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.start
}
