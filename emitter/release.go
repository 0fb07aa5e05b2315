package emitter

import (
	"context"
	"os"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/pathwatch"
)

// Releasing an idle connection (Options.ReleaseIdle): a receiver that
// serves one connection at a time (cloud-event-proxy v2) serves no one else
// while evspool keeps its connection. Once the connection carried nothing
// for ReleaseIdle, with everything read and nothing pending, the drainer
// closes it, which delivery takes as no failure, and dials again when an
// event is pending or, with state keys, when the receiver's socket path
// appears again (it restarted, empty). The dial after a release is not
// counted a reconnect.

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
	d.w.releasedAt, _ = os.Lstat(d.addr) // the socket it released: a new one is a restart
	d.record(func(l *linkStats) { l.releases++ }, nil)
	d.opts.Logger.Debug("released the idle connection", "addr", d.addr, "idle_for", d.opts.ReleaseIdle.String())
}

// awaitWork waits, after a release, until something is pending or, with
// state keys on a Unix socket, until the socket's path appears again: a
// receiver that restarted starts empty and needs the state. It returns
// false when the drainer is stopped. It waits for work, not wedged.
func (d *drainer) awaitWork() bool {
	d.pub.health.idle(true)
	defer d.pub.health.idle(false)
	appeared, stop := d.watchReturn()
	defer stop()
	for d.spool.Len() == 0 {
		d.ctl.run.Unlock()
		back := false
		select {
		case <-d.wake:
		case <-appeared:
			back = true
		case <-d.ctx.Done():
		}
		d.ctl.run.Lock()
		if d.ctx.Err() != nil {
			return false
		}
		if back {
			break
		}
	}
	d.w.released, d.w.resumed = false, true
	return true
}

// watchReturn watches, with state keys on a Unix socket, for the socket's
// path to appear; the channel gets a value when it does. stop ends the
// watch.
func (d *drainer) watchReturn() (<-chan struct{}, func()) {
	if d.opts.StateKey == nil || d.opts.Network != "unix" {
		return nil, func() {}
	}
	w, err := pathwatch.New(d.addr)
	if err != nil {
		return nil, func() {} // no inotify, or no directory: the next event dials
	}
	appeared, done := make(chan struct{}, 1), make(chan struct{})
	if fi, err := os.Lstat(d.addr); err == nil && !sameSocket(fi, d.w.releasedAt) {
		// Replaced before the watch began: the receiver restarted meanwhile.
		appeared <- struct{}{}
	}
	ctx, cancel := context.WithCancel(d.ctx)
	go func() {
		defer close(done)
		if ok, _ := w.Wait(ctx); ok {
			appeared <- struct{}{}
		}
	}()
	return appeared, func() {
		cancel()
		<-done
		w.Close()
	}
}

// sameSocket reports whether fi is the socket was (nil: none): the same
// file, made at the same time (a new socket may take a removed one's inode
// number).
func sameSocket(fi, was os.FileInfo) bool {
	return was != nil && os.SameFile(fi, was) && fi.ModTime().Equal(was.ModTime())
}
