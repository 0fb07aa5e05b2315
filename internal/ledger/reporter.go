package ledger

import (
	"log/slog"
	"time"
)

// Reporter rate-limits one repeated warning: the first at once, then at
// most one per Interval with what accumulated since, and a final report
// with the rest. Its user locks it. Every repeated warning goes through one
// (the loss lines here, the emitter's outage and failure lines).
type Reporter struct {
	Now      func() time.Time
	Interval time.Duration
	last     time.Time // the last report; zero: none yet
	events   uint64    // events noted since the last report
	seen     int       // occurrences noted since the last report
}

// Occurred notes one occurrence and reports whether a report is due.
func (r *Reporter) Occurred() bool {
	r.seen++
	return r.last.IsZero() || r.Now().Sub(r.last) >= r.Interval
}

// Lost notes n events and reports whether a report of them is due.
func (r *Reporter) Lost(n uint64, final bool) bool {
	r.events += n
	return r.events > 0 && (final || r.last.IsZero() || r.Now().Sub(r.last) >= r.Interval)
}

// Take marks a report made now, and returns the events it reports and how
// many occurrences before this one were left out.
func (r *Reporter) Take() (events uint64, left int) {
	events, left = r.events, max(r.seen-1, 0)
	r.events, r.seen, r.last = 0, 0, r.Now()
	return events, left
}

// Reported tells whether a report was made since the last Reset.
func (r *Reporter) Reported() bool { return !r.last.IsZero() }

// Reset forgets every report and what was noted.
func (r *Reporter) Reset() { r.last, r.events, r.seen = time.Time{}, 0, 0 }

// Warn logs msg if a report is due, with the occurrences left out since the
// last one.
func (r *Reporter) Warn(lg *slog.Logger, msg string, args ...any) {
	if !r.Occurred() {
		return
	}
	if _, left := r.Take(); left > 0 {
		args = append(args, "suppressed_since_last", left)
	}
	lg.Warn(msg, args...)
}
