package emitter

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
)

// reporter rate-limits one repeated warning: the first at once, then at
// most one per interval with what accumulated since, and a final report
// with the rest. Its user locks it. Every repeated warning goes through one.
type reporter struct {
	clk      Clock
	interval time.Duration
	last     time.Time // the last report; zero: none yet
	events   uint64    // events noted since the last report
	seen     int       // occurrences noted since the last report
}

func newReporter(o *Options) reporter { return reporter{clk: o.Clock, interval: o.WarnInterval} }

// occurred notes one occurrence and reports whether a report is due.
func (r *reporter) occurred() bool {
	r.seen++
	return r.last.IsZero() || r.clk.Now().Sub(r.last) >= r.interval
}

// lost notes n events and reports whether a report of them is due.
func (r *reporter) lost(n uint64, final bool) bool {
	r.events += n
	return r.events > 0 && (final || r.last.IsZero() || r.clk.Now().Sub(r.last) >= r.interval)
}

// take marks a report made now, and returns the events it reports and
// how many occurrences before this one were left out.
func (r *reporter) take() (events uint64, left int) {
	events, left = r.events, max(r.seen-1, 0)
	r.events, r.seen, r.last = 0, 0, r.clk.Now()
	return events, left
}

// warn logs msg if a report is due, with the occurrences left out since
// the last one.
func (r *reporter) warn(lg *slog.Logger, msg string, args ...any) {
	if !r.occurred() {
		return
	}
	if _, left := r.take(); left > 0 {
		args = append(args, "suppressed_since_last", left)
	}
	lg.Warn(msg, args...)
}

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
	first := o.rep.last.IsZero()
	if !o.rep.occurred() {
		return
	}
	o.rep.take()
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
		"addr", o.addr, "outage", o.rep.clk.Now().Sub(o.start).Round(time.Millisecond).String(),
		"failures", o.failures, "events_held_back", pending())
	o.start, o.rep, o.failures, o.notSocket = time.Time{}, reporter{clk: o.rep.clk, interval: o.rep.interval}, 0, false
}

func (o *outage) started() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.start
}
