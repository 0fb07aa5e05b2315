package emitter

import "github.com/evspool/evspool/internal/delivery"

// Releasing an idle connection (Options.ReleaseIdle): a receiver that
// serves one connection at a time (cloud-event-proxy v2) serves no one else
// while evspool keeps its connection. Once the connection carried nothing
// for ReleaseIdle, with everything read and nothing pending, the drainer
// closes it, which delivery takes as no failure, and dials again when an
// event is pending. The dial after a release is not counted a reconnect.

// releasable reports whether the connection may be released idle
// (Options.ReleaseIdle): everything written was read, nothing is pending
// and no request waits.
func (d *drainer) releasable() bool {
	return d.opts.ReleaseIdle > 0 && d.w.conn != nil && !d.rd.Reading && d.spool.Len() == 0 && !d.lis.requested.Load()
}

// release closes the idle connection; the next dial waits for work
// (awaitWork). Delivery is told it was no failure.
func (d *drainer) release() {
	d.step(delivery.Input{Kind: delivery.Released})
	d.disconnect()
	d.w.released = true
	d.record(func(l *linkStats) { l.releases++ }, nil)
	d.opts.Logger.Debug("released the idle connection", "addr", d.addr, "idle_for", d.opts.ReleaseIdle.String())
}

// awaitWork waits, after a release, until something is pending; false when
// the drainer is stopped. It waits for work, not wedged.
func (d *drainer) awaitWork() bool {
	d.pub.health.idle(true)
	defer d.pub.health.idle(false)
	for d.spool.Len() == 0 {
		d.ctl.run.Unlock()
		select {
		case <-d.ctl.wake:
		case <-d.ctx.Done():
		}
		d.ctl.run.Lock()
		if d.ctx.Err() != nil {
			return false
		}
	}
	d.w.released, d.w.resumed = false, true
	return true
}
