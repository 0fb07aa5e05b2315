package emitter

import (
	"sync/atomic"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// expiredLog logs the events Options.MaxAge removed unsent: the first at once,
// then at most one line per WarnInterval with the count since the last line.
// The count across restarts is kept in the spool file (wal.Stats.Expired);
// here is this process's, for Stats.Expired.
type expiredLog struct {
	here atomic.Uint64
	rep  reporter
}

// applyMaxAge applies Options.MaxAge to a batch just read, at the moment it is
// its turn to be sent. When the batch starts with expired events at the head
// of the spool, it removes that run and returns how many it removed: the
// caller reads again. When they wait behind events not yet acknowledged, it
// returns nothing to send until those are. Otherwise it returns the batch cut
// before its first expired event (an event of an earlier boot is aged on the
// wall clock, which may have stepped back, so one may follow fresh ones),
// which then waits for its turn: the order is kept. Ages are wal.Entry.Age:
// on the boot clock within a boot, so wall-clock steps do not move them.
func (d *drainer) applyMaxAge(entries []wal.Entry) ([]wal.Entry, int, error) {
	if d.opts.MaxAge <= 0 || len(entries) == 0 {
		return entries, 0, nil
	}
	now, boot := d.opts.Clock.Now(), d.opts.Clock.Boot()
	old := 0
	for old < len(entries) && entries[old].Age(now, boot) > d.opts.MaxAge {
		old++
	}
	if old == 0 {
		for i, e := range entries {
			if e.Age(now, boot) > d.opts.MaxAge {
				return entries[:i], 0, nil
			}
		}
		return entries, 0, nil
	}
	if entries[0].Seq > d.spool.FirstSeq() {
		// Events before these were written and await acknowledgement (a
		// replay window keeps them): expiring through these would remove
		// those too. Send nothing meanwhile; the drainer reads again when
		// woken or at its next tick, and these expire once at the head.
		return nil, 0, nil
	}
	gone, err := d.spool.Expire(entries[old-1].Seq)
	if err != nil {
		return nil, 0, err
	}
	d.step(msg{kind: msgFirst, seq: entries[old-1].Seq + 1})
	d.aged.here.Add(gone.Events)
	d.logExpired(gone, false)
	d.progressed()
	return nil, old, nil
}

// logExpired counts gone and logs what was not logged yet if the interval
// has passed, or anyway when final (at Close).
func (d *drainer) logExpired(gone wal.Counter, final bool) {
	if !d.aged.rep.lost(gone.Events, final) {
		return
	}
	expired, _ := d.aged.rep.take()
	d.opts.Logger.Warn("events older than the maximum age dropped unsent",
		"expired_events", expired, "expired_total", d.spool.Stats().Expired.Events,
		"max_age", d.opts.MaxAge.String(), "pending_events", d.spool.Len())
	markReported(d.spool, d.opts.Logger, ledger.Losses{Expired: d.spool.Stats().Expired.Events})
}

// progressed wakes Flush callers: events left the spool.
func (d *drainer) progressed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.progress)
	d.progress = make(chan struct{})
}
