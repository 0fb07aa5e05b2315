package emitter

import (
	"errors"
	"fmt"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

var errStalled = errors.New("receiver read nothing for the write timeout")

// sendBatch writes the next batch, waits until the receiver has read it and
// acknowledges it. It returns how many events were delivered.
func (d *drainer) sendBatch() (int, error) {
	entries, err := d.spool.Read(d.cursor, d.opts.BatchEvents, d.opts.BatchBytes)
	if errors.Is(err, wal.ErrCorrupt) {
		d.repair(err)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, nil
	}
	buf := d.buf[:0]
	for _, e := range entries {
		buf = append(append(buf, e.Data...), '\n')
	}
	if cap(buf) <= 2*d.opts.BatchBytes {
		d.buf = buf
	}
	if err := d.conn.SetWriteDeadline(time.Now().Add(d.opts.WriteTimeout)); err != nil {
		return 0, err
	}
	if err := d.write(buf); err != nil {
		return 0, err
	}
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

func (d *drainer) write(buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), writeChunk)
		if _, err := d.conn.Write(buf[:n]); err != nil {
			return fmt.Errorf("write to %s: %w", d.addr, err)
		}
		buf = buf[n:]
	}
	return nil
}

// waitConsumed polls until the receiver has read everything written: the
// queue first, a hang-up second (a dying peer's queue is freed, which also
// reads as 0). It gives up when the receiver reads nothing for WriteTimeout.
func (d *drainer) waitConsumed() error {
	interval := sockwait.DefaultMinInterval
	lastUnread, lastMove := -1, time.Now()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
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
			return fmt.Errorf("%w (%v, %d bytes unread)", errStalled, d.opts.WriteTimeout, unread)
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
