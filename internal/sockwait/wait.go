package sockwait

import (
	"context"
	"fmt"
	"time"
)

// WaitConsumed returns once the peer has read everything written so far.
//
// It checks the queue first and a hang-up second, then pauses and repeats
// (see the package doc for why in that order). It returns nil when the queue
// is empty and the peer is still there; a *PeerGoneError matching
// ErrPeerGone when the peer hung up, whatever the queue said, in which case
// the caller must resend; the context's error, wrapped, when ctx ends first;
// ErrUnsupported when Supported is false.
func (w *Waiter) WaitConsumed(ctx context.Context) error {
	if !w.ok {
		return ErrUnsupported
	}
	interval := w.opts.MinInterval
	var timer *time.Timer
	for {
		unread, gone, err := w.probe()
		switch {
		case err != nil:
			return err
		case gone != nil:
			return gone
		case unread == 0:
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(interval)
			defer timer.Stop()
		} else {
			timer.Reset(interval)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sockwait: peer has %d bytes queued unread: %w", unread, ctx.Err())
		case <-timer.C:
		}
		interval = min(2*interval, w.opts.MaxInterval)
	}
}

// Probe reads the queue, then polls for a hang-up, in one pass over the file
// descriptor, without waiting: what one round of WaitConsumed sees. gone is
// non-nil when the peer hung up; its Cause then tells (on a Unix socket, as
// long as nobody read the connection) whether the peer left data unread
// (ECONNRESET) or had read everything (io.EOF).
func (w *Waiter) Probe() (unread int, gone *PeerGoneError, err error) {
	if !w.ok {
		return 0, nil, ErrUnsupported
	}
	return w.probe()
}

// probe reads the queue, then polls for a hang-up, in one pass over the file
// descriptor. gone is non-nil when the peer hung up.
func (w *Waiter) probe() (unread int, gone *PeerGoneError, err error) {
	err = w.control(func(fd uintptr) error {
		var err error
		if unread, err = outq(fd); err != nil {
			return err
		}
		var hup bool
		if hup, err = hungUp(fd); err != nil || !hup {
			return err
		}
		gone = &PeerGoneError{Unread: unread, Cause: pendingError(fd)}
		return nil
	})
	return unread, gone, err
}
