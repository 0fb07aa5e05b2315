package emitter

import (
	"errors"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/wal"
)

// Sending inline saves a wake-up of the drainer and a read of the spool an
// event: about 7% of the CPU an event at 100 and at 1,000 events/s, a
// quarter of the system calls and a third of the heap objects at 100/s
// (node-cost with the inline send switched off, pooled: bench/README.md,
// "Where evspool-fsync's CPU beyond least-durable's goes").
//
// Sending inline: when the drainer idles caught up on a watched Unix socket,
// the Emit caller that committed the next few events writes them itself,
// under ctl.run, instead of waking the drainer to do it. sendInline checks
// every precondition first and then writes once; where any fails (anything
// the drainer would wait for, or more than one chunk) the drainer is woken
// and carries on. The drainer's own functions know nothing of it: whoever
// holds ctl.run owns the connection.

// notifyFor hands the events c committed to the drainer: sent inline when
// few, else it is woken; nothing if it read them already, so the callers of
// one group commit wake it once. This is safe because the drainer idles only
// after a Read found nothing.
func (d *drainer) notifyFor(c committed) {
	last, read := c.last(), d.ctl.readTo.Load()
	if last > read && (last-read > delivery.InlineMax || !d.sendInline(c)) {
		d.notify()
	}
}

// sendInline writes the events c committed from the caller's goroutine, in
// one write(2), if the drainer is parked and the write needs nothing the
// drainer would do or wait for; false if the drainer must be woken.
func (d *drainer) sendInline(c committed) bool {
	if !d.ctl.run.TryLock() {
		return false
	}
	defer d.ctl.run.Unlock()
	if !d.ctl.parked || !d.inlineable() {
		return false
	}
	d.checkLosses()
	if d.rd.Reading { // what the last send wrote: read by now, mostly
		if err := d.check(); err != nil {
			d.fail(err)
			return false
		}
		if d.rd.Reading {
			return false
		}
	}
	d.step(delivery.Input{Kind: delivery.Next, Seq: d.spool.FirstSeq()})
	if !d.rd.Inline(c.first, len(c.events)) || d.gapBefore(c.first) {
		return false // the drainer's; a gap's state first (writeGapState)
	}
	buf, entries, ok := inlinePayload(c, min(d.rd.Send.Max*avgEventGuess, d.opts.BatchBytes))
	if !ok || chunkEnd(buf) < len(buf) {
		return false
	}
	if err := d.writeChunk(buf, entries, true, true); err != nil {
		if !errors.Is(err, errWouldWait) {
			d.fail(err)
		}
		return false
	}
	d.pub.health.beat()
	d.noteRead(entries) // see notifyFor
	d.ctl.inlined.Add(1)
	d.step(delivery.Input{Kind: delivery.Recheck, Idle: d.idleFacts(false)})
	if d.rd.Replan {
		return false
	}
	if d.rd.Look > 0 {
		// The idle's look is for after the last activity: while sends
		// come inline, the drainer sleeps on.
		d.w.poll.Reset(d.rd.Look)
	}
	return true
}

// inlineable reports whether the next write needs no wait the drainer does:
// connected on a watched Unix socket with room proven, not frozen, no
// MaxAge to apply, no AckOnWrite and no state request to answer first.
func (d *drainer) inlineable() bool {
	w := &d.w
	return w.conn != nil && w.unix && w.waiter != nil && w.waiter.Supported() && w.hup != nil && w.room.ok &&
		!d.opts.AckOnWrite && d.opts.MaxAge <= 0 && !d.rd.Frozen && !d.lis.requested.Load()
}

// inlinePayload lays c's events out as the drainer writes them, one line
// each, and the entries that name them (their Data in buf, copied from the
// caller's, which may be reused); false if they are more bytes than one
// read of the spool takes (maxBytes, the first event always).
func inlinePayload(c committed, maxBytes int) ([]byte, []wal.Entry, bool) {
	size := 0
	for i, ev := range c.events {
		if size += len(ev); i > 0 && size > maxBytes {
			return nil, nil, false
		}
	}
	buf, entries := make([]byte, 0, size+len(c.events)), make([]wal.Entry, len(c.events))
	for i, ev := range c.events {
		at := len(buf)
		buf = append(append(buf, ev...), '\n')
		entries[i] = wal.Entry{Seq: c.first + uint64(i), Data: buf[at : at+len(ev) : at+len(ev)]}
	}
	return buf, entries, true
}
