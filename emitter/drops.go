package emitter

import (
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// dropCheckEvery is how often the drainer looks for new drop-oldest drops.
const dropCheckEvery = time.Second

// dropLog logs, rate-limited, the events drop-oldest removed: new ones only,
// as the spool's counters survive restarts.
type dropLog struct {
	seen       uint64 // DroppedOldest.Events when last looked at
	rep        reporter
	unreadable uint64 // the spool's unreadable events when last logged (losses.go)
	lastCheck  time.Time
}

// check logs new drops if the interval has passed, or anyway when final.
func (d *drainer) checkDrops(final bool) {
	now := d.clk.Now()
	if !final && now.Sub(d.drops.lastCheck) < dropCheckEvery {
		return
	}
	d.drops.lastCheck = now
	d.checkUnreadable()
	st := d.spool.Stats()
	total := st.DroppedOldest.Events
	n := total - min(d.drops.seen, total)
	d.drops.seen = max(d.drops.seen, total)
	if !d.drops.rep.lost(n, final) {
		return
	}
	dropped, _ := d.drops.rep.take()
	d.opts.Logger.Warn("spool full: oldest events dropped to make room",
		"dropped_events", dropped, "dropped_total", total, "pending_events", st.PendingEvents,
		"max_spool_bytes", st.MaxBytes, "hint", "raise the spool's size cap (--max-spool-size) or check the receiver")
	markReported(d.spool, d.opts.Logger, ledger.Losses{DroppedOldest: total})
}
