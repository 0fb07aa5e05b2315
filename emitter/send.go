package emitter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// avgEventGuess turns the batch's event count into its byte bound, which
// Options.BatchBytes caps.
const avgEventGuess = 256

var errStalled = errors.New("receiver read nothing for the stall timeout")

// stallError is a stall that cost the connection; since is when the receiver
// last read something, which is when the outage began.
type stallError struct {
	since time.Time
	err   error
}

func (e *stallError) Error() string { return e.err.Error() }
func (e *stallError) Unwrap() error { return e.err }

// sendBatch writes the next batch (one event while isolating a poison
// event), waits until the receiver has read it, puts it in the replay window
// and acknowledges what has left the window. It returns how many events were
// written.
func (d *drainer) sendBatch() (int, error) {
	n := d.batch
	isolating := d.isolating()
	if isolating {
		n = 1
	}
	entries, err := d.spool.Read(d.cursor, n, min(n*avgEventGuess, d.opts.BatchBytes))
	d.noteRead(entries)
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
	last := entries[len(entries)-1].Seq
	d.poison.inflight, d.poison.written = entries[0].Seq, max(d.poison.written, last)
	d.poison.isolated = isolating
	if !isolating {
		d.poison.isolateTo = 0 // past what a failure left unproven
	}
	if err := d.write(buf); err != nil {
		return 0, err
	}
	d.stalling = false
	d.cursor = last + 1
	if !d.opts.AckOnWrite && d.waiter.Supported() {
		if err := d.waitConsumed(); err != nil {
			if errors.Is(err, errReadThenGone) {
				d.readThenGone(entries)
			}
			return 0, err
		}
	}
	d.poison.inflight = 0
	d.win.add(entries, time.Now(), isolating)
	d.delivered = true
	d.out.up(d.spool.Len)
	d.batch = min(2*d.batch, d.opts.BatchEvents)
	d.bo.Reset()
	return len(entries), d.expire()
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
		chunk := buf[:chunkEnd(buf)]
		n, err := 0, d.awaitRoom(len(chunk)) // whole or nothing: see abandon.go
		if err == nil {
			if err = d.armWrite(); err != nil {
				return err
			}
			n, err = d.conn.Write(chunk)
		}
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
// reads as 0, so the error reports the last count seen before). A receiver
// that reads nothing for WriteTimeout is stalled. While it waits, events in
// the replay window that reach their linger time leave it.
func (d *drainer) waitConsumed() error {
	interval, maxInterval := sockwait.DefaultMinInterval, sockwait.DefaultMaxInterval
	if d.poison.isolated {
		maxInterval = isolatedPoll
	}
	lastUnread, lastMove := -1, time.Now()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		d.health.beat()
		unread, gone, err := d.waiter.Probe()
		if err != nil {
			return err
		}
		if gone != nil {
			err := fmt.Errorf("%w (%w) with %d bytes unread at the last check before; resending from the oldest event not known handled",
				sockwait.ErrPeerGone, gone.Cause, max(lastUnread, unread))
			if unread == 0 && !errors.Is(gone.Cause, syscall.ECONNRESET) {
				// No reset: its queue was empty when it closed, so it had
				// read everything (the kernel resets a close with unread
				// data, and nobody else reads this socket's error).
				err = fmt.Errorf("%w: %w", errReadThenGone, err)
			}
			return err
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
		if err := d.expire(); err != nil {
			return err
		}
		t.Reset(interval)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
		interval = min(2*interval, maxInterval)
	}
}

// isolatedPoll caps the pause between two checks while isolating: one event
// at a time, each check that comes late delays the next event.
const isolatedPoll = 250 * time.Microsecond

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
	if limit := d.stallLimit(); stalled >= limit {
		// What was read ReplayLinger ago by a receiver still here is
		// handled: only what it stopped reading at is to blame.
		if err := d.expire(); err != nil {
			return err
		}
		// Smaller batches make a slow reader's progress visible sooner: a
		// receiver slower than StallTimeout per batch still gets everything.
		d.batch = max(d.batch/8, 1)
		return &stallError{since: lastMove, err: fmt.Errorf("%w (%v, %d bytes unread)", errStalled, limit, unread)}
	}
	if !d.stalling {
		// One warning per stall, rate-limited: suppressed_since_last counts
		// stalls, not the checks of one.
		d.stalling = true
		d.record(func(l *linkStats) { l.stalls++ }, nil)
		d.stallWarn.log(d.opts.Logger, "receiver is not reading; keeping the connection",
			"addr", d.addr, "stalled_for", stalled.Round(time.Millisecond).String(), "unread_bytes", unread,
			"gives_up_after", d.stallLimit().String())
	}
	return nil
}

// stallLimit is how long a receiver may read nothing before the connection
// is dropped: StallTimeout, or while isolating a poison event (a receiver that
// stopped reading at one line is what isolation looks for) WriteTimeout, but
// at least ReplayLinger, so that the event read before has left the window
// and the one it stopped at is the oldest pending.
func (d *drainer) stallLimit() time.Duration {
	if d.isolating() {
		return max(d.opts.WriteTimeout, d.opts.ReplayLinger)
	}
	return d.opts.StallTimeout
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
		"recovered_events", r.Recovered, "unreadable_events", r.Missing, "cause", cause,
		"removed_damaged_copies", r.RemovedCopies)
}
