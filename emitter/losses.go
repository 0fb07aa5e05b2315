package emitter

import (
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Every loss is counted once, as a value, by the code that lost the events,
// into the emitter's ledger.Book, which logs it and records what was
// reported; the next Open reports what a killed process left. What the
// spool removes it hands over as values: Expire's result, a commit's drops
// (wal.Options.OnDrop), a salvage's report.

// Refuse counts n events that their producer refused before they reached
// Emit, for cause (an *EventSizeError, say), as Emit counts those it refuses
// itself: in Stats.Refused, in the spool, and logged (rate-limited).
func (e *Emitter) Refuse(n int, cause error) {
	if n > 0 {
		e.loss.Note(ledger.Refused, uint64(n), refusedAttrs(cause)...)
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

// notSpooledKind is the kind of loss of events a commit failed to spool
// with err: refused by a full spool under drop-newest (which the spool
// records), or not spooled for any other reason.
func notSpooledKind(err error, policy wal.Policy) ledger.Kind {
	if policy == wal.DropNewest && errors.Is(err, wal.ErrFull) {
		return ledger.DroppedNewest
	}
	return ledger.NotSpooled
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

// logSalvage logs what a salvage of the spool recovered and lost.
func logSalvage(lg *slog.Logger, r *wal.SalvageReport, args ...any) {
	lg.Warn("spool was damaged and has been salvaged", append(args, "corrupt_file", r.CorruptPath,
		"recovered_events", r.Recovered, "unreadable_events", r.Missing, "unreadable_seqs", r.UnreadableSeqs(),
		"cause", r.Cause, "removed_damaged_copies", r.RemovedCopies)...)
}

// lossCheckEvery is how often the drainer has the ledger log the rest of
// its rate-limited lines (checkLosses).
const lossCheckEvery = time.Second
