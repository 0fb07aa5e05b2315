package emitter

import (
	"log/slog"
	"time"
)

// reporter rate-limits one repeated warning: the first at once, then at
// most one per interval with what accumulated since, and a final report
// with the rest. Its user locks it.
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
