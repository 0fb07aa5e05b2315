package emitter

import (
	"fmt"
	"os"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
)

// A write that must be abandoned (at Close, or when the receiver read part
// of a line and nothing more for WriteTimeout) must not
// leave the receiver part of a line: cloud-event-proxy's bufio.Scanner hands
// a partial last line to its handler at EOF and on a read error alike, so
// closing after a partial write delivers a torn event, and no reset takes
// back bytes already in the peer's receive queue. So no write may stop
// mid-chunk: each chunk ends at a line's end (chunkEnd), and is written only
// once the socket's send buffer can take it whole (awaitRoom), so write(2)
// copies all of it at once or, past a deadline, nothing.

// roomNeeded is the free send-buffer memory a write of n bytes waits for:
// the kernel charges each buffer's overhead (about 1 KiB per skb on Linux
// 6.x, TCP and Unix) beside the bytes.
func roomNeeded(n int) int { return n + n/8 + 4096 }

// awaitRoom waits until the connection's send buffer can take n bytes whole.
// It returns nil when it can (or when that cannot be known: not Linux, not a
// stream socket), an error matching os.ErrDeadlineExceeded after
// WriteTimeout without room (a stall, as a write deadline would be), or the
// drainer's context error when Close interrupts it.
//
// A chunk larger than the send buffer can ever take (a line over about 200
// KiB, see --max-event-size) first raises SO_SNDBUF; if that is not enough
// it is written once the queue is empty, and can still be torn.
//
// Where the reading after the last chunk already proves the room on a Unix
// socket (sendRoom), it takes no reading at all: delivery's system calls
// run on the cores the commits need, and lengthen each fsync.
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

// roomPoll is the longest pause between two looks for room, after waited:
// a tenth of the wait so far, from sockwait.DefaultMaxInterval to
// idleCheck. A receiver that has not read for a while is not looked at
// hundreds of times a second, and one that reads again is seen within a
// tenth of the time it paused.
func roomPoll(waited time.Duration) time.Duration {
	return min(max(waited/10, sockwait.DefaultMaxInterval), idleCheck)
}

// armWrite sets the deadline of the next write. Close interrupts a write
// by setting a past deadline (onConnect); a deadline set after it would undo
// that and let Close wait a whole WriteTimeout, so the context is looked at
// after ours is set: a Close before that is seen here, one after it sets its
// past deadline over ours.
func (d *drainer) armWrite() error {
	if err := sockwait.ArmWrite(d.w.conn, d.opts.WriteTimeout); err != nil {
		return err
	}
	return d.ctx.Err()
}
