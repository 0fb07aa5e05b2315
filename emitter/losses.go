package emitter

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Every loss is reported by some process. The spool counts each kind of
// loss as it happens and how much of each was logged (ledger.MarkReported); the
// next Open logs what a killed process left. Logging comes before marking,
// so a kill between the two reports events twice rather than never.

// previousLoss is the line that reports a predecessor's loss, per kind.
var previousLoss = []struct {
	msg, kind string
	n         func(ledger.Losses) uint64
}{
	{"the previous run dropped %d events and did not report it", "dropped_oldest",
		func(l ledger.Losses) uint64 { return l.DroppedOldest }},
	{"the previous run refused %d events (spool full) and did not report it", "dropped_newest",
		func(l ledger.Losses) uint64 { return l.DroppedNewest }},
	{"the previous run expired %d events and did not report it", "expired",
		func(l ledger.Losses) uint64 { return l.Expired }},
	{"the previous run found %d events unreadable in its damaged spool and did not report it", "unreadable",
		func(l ledger.Losses) uint64 { return l.Unreadable }},
	{"the previous run refused %d lines (over the size limit, or not a line) and did not report it", "refused",
		func(l ledger.Losses) uint64 { return l.Refused }},
}

// reportPrevious logs what earlier processes lost and did not report, and
// returns what was reported already. salvaged is what this Open's salvage
// found unreadable (logged with the salvage).
func reportPrevious(spool *wal.WAL, logger *slog.Logger, salvaged uint64) (reported ledger.Losses) {
	total, rep := ledger.Reported(spool)
	if !ledger.ReportedKnown(spool) {
		// An earlier version logged its losses but did not record it.
		logger.Debug("spool of an earlier version: its loss counts are taken as reported")
		rep = total
		rep.Unreadable -= min(salvaged, rep.Unreadable)
	} else {
		for _, k := range previousLoss {
			n := k.n(total) - min(k.n(rep), k.n(total))
			if k.kind == "unreadable" {
				n -= min(salvaged, n)
			}
			if n > 0 {
				logger.Warn(fmt.Sprintf(k.msg, n),
					"unreported_events", n, "kind", k.kind, "hint", "it was killed before it logged them; inspect shows the totals")
			}
		}
	}
	markReported(spool, logger, total)
	return rep
}

// markReported records that the losses up to r were logged.
func markReported(spool *wal.WAL, logger *slog.Logger, r ledger.Losses) {
	if err := ledger.MarkReported(spool, r); err != nil && !errors.Is(err, wal.ErrClosed) {
		logger.Warn("cannot record in the spool that losses were reported; the next start may report them again", "error", err.Error())
	}
}

// lossLog logs one kind of loss Emit's callers meet, rate-limited by its
// reporter, under mu.
type lossLog struct {
	mu  sync.Mutex
	rep reporter
}

// add counts n more and reports whether a line is due; the caller holds mu.
func (l *lossLog) add(n uint64, final bool) bool { return l.rep.lost(n, final) }

// take returns the count to log and starts the next; the caller holds mu.
func (l *lossLog) take() uint64 {
	n, _ := l.rep.take()
	return n
}

// noteNotSpooled counts and logs n events Emit echoed but could not spool.
func (e *Emitter) noteNotSpooled(n int, err error) {
	e.notSpooled.mu.Lock()
	defer e.notSpooled.mu.Unlock()
	if e.notSpooled.add(uint64(n), false) {
		e.logNotSpooled("reason", spoolFailure(err), "error", err.Error())
	}
}

// logNotSpooled logs what was not logged yet; the caller holds the lock.
func (e *Emitter) logNotSpooled(args ...any) {
	e.opts.Logger.Warn("events not spooled, echoed only", append([]any{"events", e.notSpooled.take()}, args...)...)
	total, _ := ledger.Reported(e.spool)
	markReported(e.spool, e.opts.Logger, ledger.Losses{DroppedNewest: total.DroppedNewest})
}

// Refuse counts n events that their producer refused before they reached
// Emit, for cause (an *EventSizeError, say), as Emit counts those it refuses
// itself: in Stats.Refused, in the spool, and logged (rate-limited).
func (e *Emitter) Refuse(n int, cause error) {
	if n <= 0 {
		return
	}
	e.refused.mu.Lock()
	defer e.refused.mu.Unlock()
	e.refusedN.Add(uint64(n))
	// Recorded before logged: a line marks reported only what it counted.
	if err := e.spool.CountRefused(uint64(n)); err != nil && !errors.Is(err, wal.ErrClosed) {
		e.opts.Logger.Debug("cannot record refused events in the spool", "error", err.Error())
	}
	if e.refused.add(uint64(n), false) {
		e.logRefused(cause)
	}
}

// logRefused logs the refusals not logged yet; the caller holds the lock.
func (e *Emitter) logRefused(cause error) {
	args := []any{"events", e.refused.take()}
	var se *EventSizeError
	switch {
	case errors.As(cause, &se):
		args = append(args, "reason", "too_large", "size", se.Size, "limit", se.Limit,
			"hint", "raise --max-event-size (Options.MaxEventSize) or split the line")
	case errors.Is(cause, ErrNewline):
		args = append(args, "reason", "not_a_line", "hint", "send one event per Emit, without a newline inside")
	case cause != nil:
		args = append(args, "error", cause.Error())
	default:
		args = append(args, "final", true)
	}
	e.opts.Logger.Warn("events refused, not spooled", args...)
	total, _ := ledger.Reported(e.spool)
	markReported(e.spool, e.opts.Logger, ledger.Losses{Refused: total.Refused})
}

// reportFinal, at Close after the drainer stopped, logs the losses not
// logged yet and records them as reported.
func (e *Emitter) reportFinal() {
	e.d.checkDrops(true) // and unreadable events
	e.d.logExpired(wal.Counter{}, true)
	e.notSpooled.mu.Lock()
	if e.notSpooled.add(0, true) {
		e.logNotSpooled("final", true)
	}
	e.notSpooled.mu.Unlock()
	e.refused.mu.Lock()
	if e.refused.add(0, true) {
		e.logRefused(nil)
	}
	e.refused.mu.Unlock()
	total, _ := ledger.Reported(e.spool)
	markReported(e.spool, e.opts.Logger, total)
}
