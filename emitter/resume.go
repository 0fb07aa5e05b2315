package emitter

import (
	"context"
	"os"
	"time"

	"github.com/evspool/evspool/internal/pathwatch"
)

// waitDial waits until delivery's next dial (view.dialAt). Where the wait may
// end early (the receiver was down) and the receiver is on a Unix socket, it
// watches the socket's directory (pathwatch) and ends when the path
// appears. It returns false when the drainer is stopped.
func (d *drainer) waitDial() bool {
	dur := d.view.dialAt.Sub(d.clk.Now())
	if dur <= 0 {
		return d.ctx.Err() == nil
	}
	if !d.view.early || d.opts.Network != "unix" {
		return d.sleep(dur)
	}
	if d.watch == nil {
		w, err := pathwatch.New(d.addr)
		if err != nil {
			return d.sleep(dur) // no directory yet, or no inotify
		}
		d.watch = w
		// It may have appeared between the failed dial and the watch.
		if pathExists(d.addr) {
			d.step(msg{kind: msgAppeared})
			return d.ctx.Err() == nil
		}
	}
	ctx, cancel := d.timeout(dur)
	appeared, err := d.watch.Wait(ctx)
	cancel()
	if err != nil {
		d.closeWatch() // the directory went: watch it anew next time
	} else if appeared {
		d.step(msg{kind: msgAppeared})
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

func (d *drainer) closeWatch() {
	if d.watch != nil {
		d.watch.Close()
		d.watch = nil
	}
}
