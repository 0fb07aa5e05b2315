package emitter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// avgEventGuess turns the batch's event count into its byte bound, which
// Options.BatchBytes caps.
const avgEventGuess = 256

var errStalled = errors.New("receiver read nothing for the stall timeout")

// sendBatch writes the next batch, waits until the receiver has read it and
// acknowledges it. It returns how many events were delivered.
func (d *drainer) sendBatch() (int, error) {
	entries, err := d.spool.Read(d.cursor, d.batch, min(d.batch*avgEventGuess, d.opts.BatchBytes))
	if errors.Is(err, wal.ErrCorrupt) {
		d.repair(err)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var expired int // see expire.go
	if entries, expired, err = d.applyMaxAge(entries); expired > 0 || err != nil || len(entries) == 0 {
		return expired, err
	}
	buf := d.buf[:0]
	for _, e := range entries {
		buf = append(append(buf, e.Data...), '\n')
	}
	if cap(buf) <= 2*d.opts.BatchBytes {
		d.buf = buf
	}
	if err := d.write(buf); err != nil {
		return 0, err
	}
	d.stalling = false
	last := entries[len(entries)-1].Seq
	d.cursor = last + 1
	if !d.opts.AckOnWrite && d.waiter.Supported() {
		if err := d.waitConsumed(); err != nil {
			return 0, err
		}
	}
	d.out.up(d.spool.Len)
	if err := d.spool.Ack(last); err != nil {
		return 0, err
	}
	d.delivered = true
	d.batch = min(2*d.batch, d.opts.BatchEvents)
	d.bo.Reset()
	d.mu.Lock()
	d.link.delivered += uint64(len(entries))
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()
	return len(entries), nil
}

// writeChunk bounds one write(2). On a Unix socket each write becomes buffers
// of up to its size, and SIOCOUTQ only drops when a whole buffer is read: small
// writes let a slow receiver's progress show, so it is not taken for a stalled
// one.
const writeChunk = 8 << 10

// write writes buf in chunks, each with a deadline, each ending at a line's
// end: if evspool dies between two writes, the receiver is left with whole
// lines, not a torn one it would take for an event. A deadline that fires
// while the receiver is still there is a stall, not a failure: see stalled.
func (d *drainer) write(buf []byte) error {
	lastMove := time.Now()
	for len(buf) > 0 {
		d.health.beat()
		if err := d.conn.SetWriteDeadline(time.Now().Add(d.opts.WriteTimeout)); err != nil {
			return err
		}
		n, err := d.conn.Write(buf[:chunkEnd(buf)])
		buf = buf[n:]
		if n > 0 {
			lastMove = time.Now()
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || d.ctx.Err() != nil {
			return fmt.Errorf("write to %s: %w", d.addr, err)
		}
		if err := d.stalled(lastMove, len(buf)); err != nil {
			return err
		}
	}
	return nil
}

// chunkEnd returns how much of buf the next write takes: up to writeChunk
// bytes, cut after the last newline in them, or one whole line if it is
// longer than writeChunk.
func chunkEnd(buf []byte) int {
	if len(buf) <= writeChunk {
		return len(buf)
	}
	if i := bytes.LastIndexByte(buf[:writeChunk], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(buf[writeChunk:], '\n'); i >= 0 {
		return writeChunk + i + 1
	}
	return len(buf)
}

// waitConsumed polls until the receiver has read everything written: the
// queue first, a hang-up second (a dying peer's queue is freed, which also
// reads as 0). A receiver that reads nothing for WriteTimeout is stalled.
func (d *drainer) waitConsumed() error {
	interval := sockwait.DefaultMinInterval
	lastUnread, lastMove := -1, time.Now()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		d.health.beat()
		unread, err := d.waiter.Unread()
		if err != nil {
			return err
		}
		gone, err := d.waiter.HungUp()
		if err != nil {
			return err
		}
		if gone {
			return fmt.Errorf("%w before reading %d queued bytes", sockwait.ErrPeerGone, unread)
		}
		if unread == 0 {
			return nil
		}
		now := time.Now()
		if lastUnread < 0 || unread < lastUnread {
			lastUnread, lastMove = unread, now
		} else if now.Sub(lastMove) > d.opts.WriteTimeout {
			if err := d.stalled(lastMove, unread); err != nil {
				return err
			}
		}
		t.Reset(interval)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
		interval = min(2*interval, sockwait.DefaultMaxInterval)
	}
}

// stalled decides what to do about a receiver that has read nothing since
// lastMove, longer than WriteTimeout. A receiver that is still there keeps its
// connection until StallTimeout: resending on a new connection would gain
// nothing from a slow receiver and could reorder events, as it may still read
// the old connection's queue after the new one's. A receiver that hung up, or
// one stalled past StallTimeout, or any receiver when its reads cannot be
// seen, loses the connection: the events are resent on a new one.
func (d *drainer) stalled(lastMove time.Time, unread int) error {
	if !d.waiter.Supported() {
		return fmt.Errorf("write to %s: %w", d.addr, os.ErrDeadlineExceeded)
	}
	if gone, err := d.waiter.HungUp(); gone || err != nil {
		return errors.Join(sockwait.ErrPeerGone, err)
	}
	stalled := time.Since(lastMove)
	if stalled >= d.opts.StallTimeout {
		// Smaller batches make a slow reader's progress visible sooner: a
		// receiver slower than StallTimeout per batch still gets everything.
		d.batch = max(d.batch/8, 1)
		return fmt.Errorf("%w (%v, %d bytes unread)", errStalled, d.opts.StallTimeout, unread)
	}
	if !d.stalling {
		d.stalling = true
		d.record(func(l *linkStats) { l.stalls++ }, nil)
	}
	d.stallWarn.log(d.opts.Logger, "receiver is not reading; keeping the connection",
		"addr", d.addr, "stalled_for", stalled.Round(time.Millisecond).String(), "unread_bytes", unread,
		"gives_up_after", d.opts.StallTimeout.String())
	return nil
}

// repair salvages a spool whose records turned out damaged while draining.
func (d *drainer) repair(cause error) {
	r, err := d.spool.Repair(cause)
	if err != nil {
		d.opts.Logger.Error("spool damaged and could not be salvaged", "error", err)
		d.sleep(time.Second)
		return
	}
	d.cursor = 0
	d.opts.Logger.Warn("spool was damaged and has been salvaged", "corrupt_file", r.CorruptPath,
		"recovered_events", r.Recovered, "unreadable_events", r.Missing, "cause", cause)
}
