package emitter

import (
	"fmt"
	"os"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
)

// An abandoned write must not leave the receiver part of a line: a scanner
// hands a partial last line to its handler at EOF. So each chunk ends at a
// line's end and is written only once the send buffer can take it whole, so
// that write(2) copies all of it or, past its deadline, nothing.

// roomNeeded is the free send-buffer memory a write of n bytes waits for,
// the kernel's per-buffer overhead included.
func roomNeeded(n int) int { return n + n/8 + 4096 }

// awaitRoom waits until the send buffer can take n bytes whole. It returns
// nil when it can (or when that cannot be known), an error matching
// os.ErrDeadlineExceeded after WriteTimeout, or the context's error at Close.
// A chunk larger than the buffer can ever take first raises SO_SNDBUF, then
// waits for an empty queue, and can still be torn. Where sendRoom already
// proves the room it takes no reading, sparing the cores commits need.
func (d *drainer) awaitRoom(n int) error {
	rc, ok := rawSocket(d.w.conn)
	if !ok {
		return nil
	}
	need := roomNeeded(n)
	if r := d.w.room; r.ok && r.queued+need <= r.sndbuf {
		return nil
	}
	start := d.clk.Now()
	deadline := start.Add(d.opts.WriteTimeout)
	interval := sockwait.DefaultMinInterval
	raised := false
	t := d.clk.NewTimer(time.Hour)
	defer t.Stop()
	for {
		sndbuf, queued, err := sendMem(rc)
		d.w.room.readings++
		if err != nil {
			return nil // cannot tell: write as before
		}
		if need > sndbuf && !raised {
			raised = true
			raiseSndbuf(rc, need)
			continue
		}
		if sndbuf-queued >= need || (need > sndbuf && queued == 0) {
			d.w.room.sndbuf = sndbuf
			return nil
		}
		if d.clk.Now().After(deadline) {
			return fmt.Errorf("no room in the send buffer for %d bytes: %w", n, os.ErrDeadlineExceeded)
		}
		t.Reset(interval)
		select {
		case <-t.C():
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
		interval = min(2*interval, roomPoll(d.clk.Now().Sub(start)))
	}
}

// roomPoll is the longest pause between two looks for room after waited: a
// tenth of the wait so far, within sockwait.DefaultMaxInterval and idleCheck.
func roomPoll(waited time.Duration) time.Duration {
	return min(max(waited/10, sockwait.DefaultMaxInterval), idleCheck)
}

// armWrite sets the next write's deadline, then checks the context: a Close
// before it is seen here, one after it sets its past deadline over ours.
func (d *drainer) armWrite() error {
	if err := sockwait.ArmWrite(d.w.conn, d.opts.WriteTimeout); err != nil {
		return err
	}
	return d.ctx.Err()
}
