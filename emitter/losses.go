package emitter

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/wal"
)

// Every loss is reported, exactly, by some process. The spool counts drops
// and expiries in the transaction that loses the events, and how much of
// each count was logged (wal.MarkReported, raised after each log line that
// reports losses, and at Close). A process killed before it logged leaves
// the difference, which the next Open logs: "the previous run dropped 29
// events and did not report it". Logging comes before marking, so a kill
// between the two reports those events twice rather than never.
//
// Not covered: events echoed but not spooled for a reason that also stops
// the spool from recording them (disk full, I/O error; drop-newest refusals
// are recorded), and dead letters (logged one by one as set aside).

// reportPrevious logs what earlier processes lost and did not report.
func reportPrevious(spool *wal.WAL, logger *slog.Logger) {
	total, rep := spool.Reported()
	if !spool.ReportedKnown() {
		// A spool of an earlier version, which did not record what it
		// reported: its losses were logged then, as that version did.
		logger.Debug("spool of an earlier version: its loss counts are taken as reported")
	} else {
		for _, k := range []struct {
			verb, kind string
			n          uint64
		}{
			{"dropped", "dropped_oldest", total.DroppedOldest - min(rep.DroppedOldest, total.DroppedOldest)},
			{"refused", "dropped_newest", total.DroppedNewest - min(rep.DroppedNewest, total.DroppedNewest)},
			{"expired", "expired", total.Expired - min(rep.Expired, total.Expired)},
		} {
			if k.n > 0 {
				logger.Warn(fmt.Sprintf("the previous run %s %d events and did not report it", k.verb, k.n),
					"unreported_events", k.n, "kind", k.kind, "hint", "it was killed before it logged them; inspect shows the totals")
			}
		}
	}
	markReported(spool, logger, total)
}

// markReported records that the losses up to r were logged.
func markReported(spool *wal.WAL, logger *slog.Logger, r wal.Losses) {
	if err := spool.MarkReported(r); err != nil && !errors.Is(err, wal.ErrClosed) {
		logger.Warn("cannot record in the spool that losses were reported; the next start may report them again", "error", err.Error())
	}
}

// notSpooledLog logs the events Emit echoed but could not spool: the first
// failure at once, then at most one line per interval with the count since
// the last line, and the rest at Close, so the lines add up to the total.
type notSpooledLog struct {
	mu       sync.Mutex
	interval time.Duration
	last     time.Time
	unlogged uint64
}

// note counts n events not spooled for err and logs if it is time.
func (e *Emitter) noteNotSpooled(n int, err error) {
	l := &e.notSpooled
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unlogged += uint64(n)
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return
	}
	e.logNotSpooled(now, "reason", spoolFailure(err), "error", err.Error())
}

// logNotSpooled logs what was not logged yet; the caller holds the lock.
func (e *Emitter) logNotSpooled(now time.Time, args ...any) {
	l := &e.notSpooled
	if l.unlogged == 0 {
		return
	}
	e.opts.Logger.Warn("events not spooled, echoed only", append([]any{"events", l.unlogged}, args...)...)
	l.last, l.unlogged = now, 0
	total, _ := e.spool.Reported()
	markReported(e.spool, e.opts.Logger, wal.Losses{DroppedNewest: total.DroppedNewest})
}

// reportFinal logs the losses not logged yet and records them as reported:
// at Close, the drainer gone.
func (e *Emitter) reportFinal() {
	e.d.checkDrops(true)
	e.d.logExpired(wal.Counter{}, time.Now(), true)
	e.notSpooled.mu.Lock()
	e.logNotSpooled(time.Now(), "final", true)
	e.notSpooled.mu.Unlock()
	total, _ := e.spool.Reported()
	markReported(e.spool, e.opts.Logger, total)
}
