package emitter

import (
	"context"
	"os"
	"time"

	"github.com/evspool/evspool/internal/pathwatch"
)

const (
	// After a socket path appeared, up to quickDials refused dials are
	// retried quickly, from quickFirst doubling to quickMax: the path
	// appears at bind(2), a moment before listen(2).
	quickDials = 25
	quickFirst = 250 * time.Microsecond
	quickMax   = 2 * time.Millisecond
)

// resume cuts the backoff short when a Unix socket's path appears (see
// pathwatch); elsewhere the backoff alone paces the dials.
type resume struct {
	watch *pathwatch.Watch
	quick int    // quick dials left since the path last appeared
	since uint64 // connections made when it appeared: one more ends the quick dials
}

// backoffWait waits before the next dial, at most the backoff's next
// interval. It returns false when the drainer is stopped.
func (d *drainer) backoffWait() bool {
	dur := d.dial.bo.NextBackOff()
	if d.opts.Network != "unix" {
		return d.sleep(dur)
	}
	r := &d.dial.resume
	// Only this goroutine writes d.link: no lock to read it.
	if r.quick > 0 && d.link.connects == r.since {
		dur = min(dur, quickFirst<<min(quickDials-r.quick, 3), quickMax)
		r.quick--
	} else {
		r.quick = 0
	}
	if r.watch == nil {
		w, err := pathwatch.New(d.addr)
		if err != nil {
			return d.sleep(dur) // no directory yet, or no inotify
		}
		r.watch = w
		// It may have appeared between the failed dial and the watch.
		if pathExists(d.addr) {
			return d.ctx.Err() == nil
		}
	}
	ctx, cancel := d.timeout(dur)
	appeared, err := r.watch.Wait(ctx)
	cancel()
	if err != nil {
		r.close() // the directory went: watch it anew next time
		return d.ctx.Err() == nil
	}
	if appeared {
		r.quick, r.since = quickDials, d.link.connects
	}
	return d.ctx.Err() == nil
}

// timeout is context.WithTimeout on the drainer's clock.
func (d *drainer) timeout(dur time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(d.ctx)
	t := d.clk.NewTimer(dur)
	go func() {
		defer cancel()
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (r *resume) close() {
	if r.watch != nil {
		r.watch.Close()
		r.watch = nil
	}
}
