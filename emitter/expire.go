package emitter

import (
	"sync/atomic"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// expiredLog logs the events Options.MaxAge removed unsent, rate-limited;
// here is this process's count, for Stats.Expired.
type expiredLog struct {
	here atomic.Uint64
	rep  reporter
}

// applyMaxAge applies Options.MaxAge to a batch just read. Expired events at
// the spool's head are removed, and their count returned: the caller reads
// again. Otherwise the batch is cut before its first expired event, which
// waits for its turn (events of an earlier boot, aged on the wall clock, may
// expire out of order).
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
		// Expiring these would remove the unacknowledged events before
		// them too: send nothing until they expire at the head.
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

// logExpired counts gone and logs what is due, or everything when final.
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
