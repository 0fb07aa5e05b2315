package emitter

import (
	"slices"
	"time"
)

// Blame only on evidence: an event earns a strike only when the receiver
// handled the line before it and then died on it alone, or stopped inside
// it. A crash-looping or frozen receiver earns none. docs/delivery.md,
// "Poison events and the dead-letter file" and "Frozen and crash-looping
// receivers", gives the rules.

// crashLoopNote is how many empty connections in a row log a crash loop.
const crashLoopNote = 3

// hungUp records a hang-up at now; reset means with bytes unread.
func (d *delivery) hungUp(now time.Time, reset bool) ready {
	c := d.conn
	if c == nil {
		return ready{}
	}
	if !reset {
		c.readAll(now)
	}
	r := d.ack(time.Time{}) // gone: only its reads prove anything handled
	if d.kernelReads() {
		r = d.hungUpTCP(r, c)
	}
	if k, last, ok := c.oldest(); ok {
		// k read alone, or begun and stopped inside, by a read that began
		// where the line before it ended: that one was handled, k was not.
		alone, inside := c.read == k.end && !c.partial, c.partial && c.read == k.start
		if !d.kernelReads() && d.isolating() && k.start > 0 && c.lastFrom == k.start && (alone || inside) {
			r = d.strike(r, k.seq)
		}
		d.isolateTo = max(d.isolateTo, last.seq)
	}
	if c.handled {
		d.empty = 0
	} else {
		d.empty++
		if d.empty == crashLoopNote {
			r.notes = append(r.notes, note{kind: noteCrashLoop, n: d.empty, since: c.start})
		}
	}
	d.backOff(now, !c.handled)
	d.conn, d.cursor = nil, 0
	return r
}

// tick is the clock: lines read linger ago by a receiver still connected
// are handled; a receiver that read nothing with bytes unread is slow after
// warnAfter and frozen after stallAfter; one stopped inside a line for
// stuckAfter is stuck.
func (d *delivery) tick(now time.Time) ready {
	c := d.conn
	if c == nil {
		return ready{}
	}
	r := d.ack(now)
	if c.allRead() && !c.partial {
		return r
	}
	idle := now.Sub(c.lastMove)
	if idle >= d.cfg.warnAfter && !c.slow {
		c.slow = true
		r.notes = append(r.notes, note{kind: noteSlow, since: c.lastMove})
	}
	if k, last, ok := c.oldest(); ok && c.partial && k.start == c.read && idle >= d.cfg.stuckAfter {
		return d.stuck(r, now, k, last)
	}
	if idle >= d.cfg.stallAfter && !c.frozen {
		c.frozen = true
		r.notes = append(r.notes, note{kind: noteFrozen, since: c.lastMove})
	}
	return r
}

// stuck strikes k, inside which the receiver stopped, and abandons the
// connection.
func (d *delivery) stuck(r ready, now time.Time, k, last sentLine) ready {
	r.notes = append(r.notes, note{kind: noteStuck, seq: k.seq, since: d.conn.lastMove})
	r = d.strike(r, k.seq)
	d.isolateTo = max(d.isolateTo, last.seq)
	r.abandon, d.dial.at = true, now
	d.conn, d.cursor = nil, 0
	return r
}

// lost records that the shell dropped the connection for a reason of its
// own: nobody is blamed, and what is not known handled is resent, isolated.
func (d *delivery) lost() ready {
	c := d.conn
	if c == nil {
		return ready{}
	}
	r := d.ack(time.Time{})
	if _, last, ok := c.oldest(); ok {
		d.isolateTo = max(d.isolateTo, last.seq)
	}
	d.conn, d.cursor = nil, 0
	return r
}

// wakeAt is when tick has something to do next: a stall threshold not yet
// passed, or the oldest line read but not known handled reaching linger.
func (d *delivery) wakeAt() (time.Time, bool) {
	c := d.conn
	if c == nil {
		return time.Time{}, false
	}
	if !c.allRead() || c.partial {
		var next []time.Duration
		if !c.slow {
			next = append(next, d.cfg.warnAfter)
		}
		if c.partial {
			next = append(next, d.cfg.stuckAfter)
		}
		if !c.frozen {
			next = append(next, d.cfg.stallAfter)
		}
		if len(next) == 0 {
			return time.Time{}, false // frozen: the shell polls for reads
		}
		return c.lastMove.Add(slices.Min(next)), true
	}
	hold, held := d.tcpHold(time.Time{}) // the time only
	for _, l := range c.lines {
		if !l.witness && !l.readAt.IsZero() && d.cfg.linger > 0 {
			at := l.readAt.Add(d.cfg.linger)
			if held && hold.Before(at) {
				at = hold
			}
			return at, true
		}
	}
	return hold, held
}

// strike counts a strike against seq and sets it aside after maxAttempts,
// if it is the oldest pending event (the only one removable alone).
func (d *delivery) strike(r ready, seq uint64) ready {
	if d.strikes.seq == seq {
		d.strikes.n++
	} else {
		d.strikes = strikeRecord{seq: seq, n: 1}
	}
	if d.witness+1 == seq {
		d.strikes.witness = d.witness
	}
	r.saveStrike = true
	r.notes = append(r.notes, note{kind: noteStrike, seq: seq, n: d.strikes.n})
	if d.cfg.maxAttempts > 0 && d.strikes.n >= d.cfg.maxAttempts && seq == d.oldestPending() {
		r.setAside = seq
	}
	return r
}

// skipTo records that the spool's oldest pending event is first: what came
// before left it another way (the full-spool policy, expiry).
func (d *delivery) skipTo(first uint64) {
	if first > d.acked+1 {
		d.acked = first - 1
		if d.conn != nil {
			d.conn.dropThrough(d.acked)
		}
		d.clearStrikes(d.acked)
	}
}
