package emitter

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

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

// lossLog reports one kind of loss Emit's callers meet, under mu.
type lossLog struct {
	mu  sync.Mutex
	rep reporter
}

// noteNotSpooled counts and logs n events Emit echoed but could not spool.
func (e *Emitter) noteNotSpooled(n int, err error) {
	e.notSpooled.mu.Lock()
	defer e.notSpooled.mu.Unlock()
	if e.notSpooled.rep.lost(uint64(n), false) {
		e.logNotSpooled("reason", spoolFailure(err), "error", err.Error())
	}
}

// logNotSpooled logs what was not logged yet; the caller holds the lock.
func (e *Emitter) logNotSpooled(args ...any) {
	n, _ := e.notSpooled.rep.take()
	e.opts.Logger.Warn("events not spooled, echoed only", append([]any{"events", n}, args...)...)
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
	if e.refused.rep.lost(uint64(n), false) {
		e.logRefused(cause)
	}
}

// logRefused logs the refusals not logged yet; the caller holds the lock.
func (e *Emitter) logRefused(cause error) {
	n, _ := e.refused.rep.take()
	args := []any{"events", n}
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

// dropCheckEvery is how often the drainer looks for new drop-oldest drops.
const dropCheckEvery = time.Second
