package emitter

import (
	"context"
	"errors"
	"fmt"
)

// Close stops the drainer, even mid-write, and closes the spool; it returns
// by the time ctx ends. What was not delivered stays spooled for the next
// Open, and the receiver is left whole lines only. A second Close waits for
// the first (or its own ctx) and returns the first's result.
func (e *Emitter) Close(ctx context.Context) error {
	first := false
	e.closeOnce.Do(func() {
		first = true
		e.closed.Store(true)
	})
	if first {
		e.closeErr = e.shutdown(ctx)
		close(e.closeDone)
		return e.closeErr
	}
	select {
	case <-e.closeDone:
		return e.closeErr
	case <-ctx.Done():
		return fmt.Errorf("emitter: close: waiting for the first Close: %w", ctx.Err())
	}
}

func (e *Emitter) shutdown(ctx context.Context) error {
	e.link.stop()
	select {
	case <-e.link.done:
		e.loss.Final() // the drainer is gone: nothing else counts losses now
		if err := e.link.lis.stop(ctx); err != nil {
			return errors.Join(err, e.spool.Close())
		}
	case <-ctx.Done():
		// The drainer is stuck where no deadline reaches; it survives the
		// spool closing under it (its calls get ErrClosed).
		err := e.spool.Close()
		return errors.Join(fmt.Errorf("emitter: close: drainer did not stop: %w", ctx.Err()), err)
	}
	return e.spool.Close()
}
