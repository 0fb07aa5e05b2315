package emitter

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Every loss is reported by some process. The spool counts each kind of
// loss as it happens and how much of each was logged (ledger.MarkReported); the
// next Open logs what a killed process left. Logging comes before marking,
// so a kill between the two reports events twice rather than never.

// lossKind is how one kind of loss is logged: in this run (rate-limited,
// and the rest at Close with final=true), and by the next start when this
// run was killed before it logged them.
type lossKind struct {
	name, msg, count string // kind= of the next start's line; this run's line and its attribute of the events
	prev             string // the next start's line, of %d events
	polled           bool   // counted by the spool in its own transactions: news are read from its count (checkLosses)
	attrs            func(l *losses) []any
	record           func(spool *wal.WAL, n uint64) error // counts them in the spool before they are logged
}

// lossKinds are the kinds of loss the spool counts; a kind added to
// ledger.Kind is a row here.
var lossKinds = [ledger.Kinds]lossKind{
	ledger.DroppedOldest: {name: "dropped_oldest", msg: "spool full: oldest events dropped to make room", count: "dropped_events",
		prev: "the previous run dropped %d events and did not report it", polled: true,
		attrs: func(l *losses) []any {
			st := l.spool.Stats()
			return []any{"dropped_total", st.DroppedOldest.Events, "pending_events", st.PendingEvents, "max_spool_bytes", st.MaxBytes,
				"hint", "raise the spool's size cap (--max-spool-size) or check the receiver"}
		}},
	ledger.DroppedNewest: {name: "dropped_newest", msg: "events not spooled, echoed only", count: "events",
		prev: "the previous run refused %d events (spool full) and did not report it"},
	ledger.Expired: {name: "expired", msg: "events older than the maximum age dropped unsent", count: "expired_events",
		prev: "the previous run expired %d events and did not report it",
		attrs: func(l *losses) []any {
			return []any{"expired_total", l.spool.Stats().Expired.Events, "max_age", l.opts.MaxAge.String(), "pending_events", l.spool.Len()}
		}},
	ledger.Unreadable: {name: "unreadable", msg: "spool was damaged and has been salvaged: events lost", count: "unreadable_events",
		prev: "the previous run found %d events unreadable in its damaged spool and did not report it", polled: true,
		attrs: func(l *losses) []any {
			attrs := []any{"unreadable_total", l.spool.Stats().Unreadable}
			if r := l.spool.Salvaged(); r != nil {
				attrs = append(attrs, "corrupt_file", r.CorruptPath, "cause", r.Cause)
			}
			return attrs
		}},
	ledger.Refused: {name: "refused", msg: "events refused, not spooled", count: "events",
		prev:   "the previous run refused %d lines (over the size limit, or not a line) and did not report it",
		record: (*wal.WAL).CountRefused},
}

// losses logs this run's losses by kind and records them as reported; Emit
// callers and the drainer share it, each kind under its own lock.
type losses struct {
	spool *wal.WAL
	opts  *Options
	kinds [ledger.Kinds]struct {
		mu   sync.Mutex
		rep  reporter
		seen uint64        // a polled kind's count in the spool when last looked at
		here atomic.Uint64 // events of the kind this process noted
	}
}

// newLosses reports what earlier processes lost and did not report (see
// previous); what they lost is not news to the returned losses.
func newLosses(spool *wal.WAL, opts *Options, salvaged uint64) (*losses, ledger.Losses) {
	l := &losses{spool: spool, opts: opts}
	reported := l.previous(salvaged)
	total := ledger.Totals(spool)
	for k := range l.kinds {
		l.kinds[k].rep, l.kinds[k].seen = newReporter(opts), total[k]
	}
	return l, reported
}

// note counts n events of kind k lost (for a polled kind, what the spool's
// count grew by besides) and logs them if a line is due, or anyway when
// final, with args after the kind's attributes.
func (l *losses) note(k ledger.Kind, n uint64, final bool, args ...any) {
	row, s := &lossKinds[k], &l.kinds[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	if row.polled {
		total := ledger.Totals(l.spool)[k]
		n += total - min(s.seen, total)
		s.seen = max(s.seen, total)
	}
	s.here.Add(n)
	// Recorded before logged: a line marks reported only what it counted.
	if row.record != nil && n > 0 {
		if err := row.record(l.spool, n); err != nil && !errors.Is(err, wal.ErrClosed) {
			l.opts.Logger.Debug("cannot record lost events in the spool", "kind", row.name, "error", err.Error())
		}
	}
	if !s.rep.lost(n, final) {
		return
	}
	events, _ := s.rep.take()
	attrs := []any{row.count, events}
	if row.attrs != nil {
		attrs = append(attrs, row.attrs(l)...)
	}
	l.opts.Logger.Warn(row.msg, append(attrs, args...)...)
	l.mark(k)
}

// logged records that the caller logged kind k's count in the spool: no
// news any more.
func (l *losses) logged(k ledger.Kind) {
	s := &l.kinds[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = max(s.seen, l.mark(k))
}

// mark records kind k's count in the spool as reported, and returns it.
func (l *losses) mark(k ledger.Kind) uint64 {
	var r ledger.Losses
	r[k] = ledger.Totals(l.spool)[k]
	markReported(l.spool, l.opts.Logger, r)
	return r[k]
}

// final, at Close after the drainer stopped, logs the losses not logged
// yet and records every loss as reported.
func (l *losses) final() {
	for k := range l.kinds {
		l.note(ledger.Kind(k), 0, true, "final", true)
	}
	markReported(l.spool, l.opts.Logger, ledger.Totals(l.spool))
}

// previous logs what earlier processes lost and did not report, and
// returns what was reported already. salvaged is what this Open's salvage
// found unreadable (logged with the salvage).
func (l *losses) previous(salvaged uint64) (reported ledger.Losses) {
	total, rep := ledger.Reported(l.spool)
	logged := rep
	logged[ledger.Unreadable] += salvaged
	if !ledger.ReportedKnown(l.spool) {
		// An earlier version logged its losses but did not record it.
		l.opts.Logger.Debug("spool of an earlier version: its loss counts are taken as reported")
		rep, logged = total, total
		rep[ledger.Unreadable] -= min(salvaged, rep[ledger.Unreadable])
	}
	for k, row := range lossKinds {
		if n := total[k] - min(logged[k], total[k]); n > 0 {
			l.opts.Logger.Warn(fmt.Sprintf(row.prev, n),
				"unreported_events", n, "kind", row.name, "hint", "it was killed before it logged them; inspect shows the totals")
		}
	}
	markReported(l.spool, l.opts.Logger, total)
	return rep
}

// logSalvage logs what a salvage of the spool recovered and lost.
func logSalvage(lg *slog.Logger, r *wal.SalvageReport, args ...any) {
	lg.Warn("spool was damaged and has been salvaged", append(args, "corrupt_file", r.CorruptPath,
		"recovered_events", r.Recovered, "unreadable_events", r.Missing, "unreadable_seqs", r.UnreadableSeqs(),
		"cause", r.Cause, "removed_damaged_copies", r.RemovedCopies)...)
}

// markReported records that the losses up to r were logged.
func markReported(spool *wal.WAL, logger *slog.Logger, r ledger.Losses) {
	if err := ledger.MarkReported(spool, r); err != nil && !errors.Is(err, wal.ErrClosed) {
		logger.Warn("cannot record in the spool that losses were reported; the next start may report them again", "error", err.Error())
	}
}

// Refuse counts n events that their producer refused before they reached
// Emit, for cause (an *EventSizeError, say), as Emit counts those it refuses
// itself: in Stats.Refused, in the spool, and logged (rate-limited).
func (e *Emitter) Refuse(n int, cause error) {
	if n > 0 {
		e.loss.note(ledger.Refused, uint64(n), false, refusedAttrs(cause)...)
	}
}

// refusedAttrs are the attributes of a line of events refused for cause.
func refusedAttrs(cause error) []any {
	var se *EventSizeError
	switch {
	case errors.As(cause, &se):
		return []any{"reason", "too_large", "size", se.Size, "limit", se.Limit,
			"hint", "raise --max-event-size (Options.MaxEventSize) or split the line"}
	case errors.Is(cause, ErrNewline):
		return []any{"reason", "not_a_line", "hint", "send one event per Emit, without a newline inside"}
	case cause != nil:
		return []any{"error", cause.Error()}
	}
	return nil
}

// spoolFailure names why a commit failed, for the log.
func spoolFailure(err error) string {
	switch {
	case errors.Is(err, wal.ErrFull):
		return "spool_full"
	case errors.Is(err, wal.ErrTooLarge):
		return "event_too_large"
	case errors.Is(err, syscall.ENOSPC), strings.Contains(err.Error(), "no space left on device"):
		// bbolt formats some errors with %s, losing the errno.
		return "disk_full"
	case errors.Is(err, wal.ErrClosed):
		return "closed"
	}
	return "io_error"
}

// lossCheckEvery is how often the drainer looks for the polled kinds' news.
const lossCheckEvery = time.Second
