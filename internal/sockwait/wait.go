package sockwait

import (
	"context"
	"fmt"
	"time"
)

// WaitConsumed returns nil once the peer has read everything written so
// far. It returns a *PeerGoneError when the peer hung up, whatever the queue
// said (the caller resends); ctx's error, wrapped, when ctx ends first; and
// ErrUnsupported where Supported is false.
func (w *Waiter) WaitConsumed(ctx context.Context) error {
	interval := DefaultMinInterval
	var timer *time.Timer
	for {
		unread, gone, err := w.Probe()
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
		interval = min(2*interval, DefaultMaxInterval)
	}
}

// Probe is one round of WaitConsumed, without waiting: it reads the queue,
// then polls for a hang-up (see the package doc for the order). gone is
// non-nil when the peer hung up.
func (w *Waiter) Probe() (unread int, gone *PeerGoneError, err error) {
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
