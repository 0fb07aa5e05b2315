package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/evspool/evspool/emitter"
)

// dropLogInterval is the least time between two drop warnings.
const dropLogInterval = 30 * time.Second

// dropWatch logs the events the drop-oldest policy removed from a full
// spool: the first drops at once, then at most one line per interval with
// the count since the last line. (Under drop-newest the emitter warns itself,
// as the refused Emit returns an error.)
type dropWatch struct {
	em      *emitter.Emitter
	logger  *slog.Logger
	logged  uint64 // DroppedOldest.Events when last logged
	lastLog time.Time
}

func newDropWatch(em *emitter.Emitter, logger *slog.Logger) *dropWatch {
	return &dropWatch{em: em, logger: logger, logged: em.Stats().Spool.DroppedOldest.Events}
}

func (w *dropWatch) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.check(w.em.Stats(), now, false)
		}
	}
}

// check logs new drops if the interval has passed, or anyway when final.
func (w *dropWatch) check(st emitter.Stats, now time.Time, final bool) {
	total := st.Spool.DroppedOldest.Events
	if total <= w.logged || (!final && now.Sub(w.lastLog) < dropLogInterval) {
		return
	}
	w.logger.Warn("spool full: oldest events dropped to make room",
		"dropped_events", total-w.logged, "dropped_total", total, "pending_events", st.Pending,
		"max_spool_bytes", st.Spool.MaxBytes, "hint", "raise --max-spool-size, or check the receiver")
	w.logged, w.lastLog = total, now
}
