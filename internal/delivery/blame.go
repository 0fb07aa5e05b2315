package delivery

import "time"

// Blame only on evidence: an event earns a strike only when the receiver
// handled the line before it and then died on it alone, or stopped inside
// it. Where a hang-up cannot tell which of two lines it followed, nobody is
// blamed: the later becomes the suspect, tried alone next time. A
// crash-looping or frozen receiver earns none. docs/delivery.md, "Poison
// events and the dead-letter file" and "Frozen and crash-looping
// receivers", gives the rules.

// crashLoopNote is how many empty connections in a row log a crash loop.
const crashLoopNote = 3

// failed judges a connection's end at now from what the caller saw: the
// receiver hung up (with bytes unread, or having read everything), or the
// caller dropped it for a reason of its own.
func (d *Delivery) failed(now time.Time, cause Cause, unread int) {
	switch cause {
	case CauseGone:
		d.hungUp(now, unread > 0)
	case CauseReset, CauseBroken, CauseFin:
		d.hungUp(now, true)
	default:
		d.connLost()
		d.backOff(now, d.empty > 0)
	}
}

// hungUp records a hang-up at now; reset means with bytes unread.
func (d *Delivery) hungUp(now time.Time, reset bool) {
	c := d.conn
	if c == nil {
		return
	}
	if !reset {
		c.observe(now, 0) // it read everything
	}
	d.ackHandled(time.Time{}) // gone: only its reads prove anything handled
	if d.kernelReads() {
		d.hungUpTCP(c)
	}
	if k, last, ok := c.oldest(); ok {
		if !d.kernelReads() && c.reads && d.isolating() {
			d.blame(c, k, reset)
		}
		d.isolateTo = max(d.isolateTo, last.seq)
	}
	if c.handled {
		d.empty = 0
	} else {
		d.empty++
		if d.empty == crashLoopNote {
			d.rd.Notes = append(d.rd.Notes, Note{Kind: NoteCrashLoop, N: d.empty, Since: c.start})
		}
	}
	d.backOff(now, !c.handled)
	d.conn, d.cursor = nil, 0
}

// shortLine is the longest line no receiver fails inside: it fits the
// smallest buffer a line reader starts with (bufio's 4 KiB), so bytes of it
// left unread at a hang-up were never begun.
const shortLine = 4 << 10

// blame judges a hang-up while isolating on a socket that shows the
// receiver's reads (not TCP's, whatever the window mode); k is the oldest
// event not known handled, reset a hang-up with bytes unread.
// A strike, for k: read alone, or begun and stopped inside, by a read that
// began where the line before it ended (that one was handled, k was not);
// or, the suspect, written alone once all before it was handled and left
// unread by a receiver not frozen. A hang-up with a longer line unread,
// which the receiver may have read into and failed on (its close took the
// rest), tells neither: that line becomes the suspect instead.
func (d *Delivery) blame(c *connState, k sentLine, reset bool) {
	u, ok := c.firstUnread()
	intoLong := reset && ok && !u.witness && u.end-u.start > shortLine
	alone, inside := c.read == k.end && !c.partial && !intoLong, c.partial && c.read == k.start
	given := k.proven && k.seq == d.suspect && reset && c.read == k.start && c.written == k.end && !c.frozen
	switch {
	case k.start > 0 && c.lastFrom == k.start && (alone || inside), given:
		d.strike(k.seq)
	case intoLong:
		d.suspect = u.seq
	}
}

// tick is the clock: lines read linger ago by a receiver still connected
// are handled; a receiver that read nothing with bytes unread is slow after
// WarnAfter and frozen after StallAfter; one stopped inside a line for
// StuckAfter is stuck.
func (d *Delivery) tick(now time.Time) {
	c := d.conn
	if c == nil {
		return
	}
	d.ackHandled(now)
	if c.allRead() && !c.partial {
		return
	}
	idle := now.Sub(c.lastMove)
	if idle >= d.cfg.WarnAfter && !c.slow {
		c.slow = true
		d.rd.Notes = append(d.rd.Notes, Note{Kind: NoteSlow, Since: c.lastMove})
	}
	if k, last, ok := c.oldest(); ok && c.partial && k.start == c.read && idle >= d.cfg.StuckAfter {
		d.stuck(now, k, last)
		return
	}
	if idle >= d.cfg.StallAfter && !c.frozen {
		c.frozen = true
		d.rd.Notes = append(d.rd.Notes, Note{Kind: NoteFrozen, Since: c.lastMove})
	}
}

// stuck strikes k, inside which the receiver stopped, and abandons the
// connection.
func (d *Delivery) stuck(now time.Time, k, last sentLine) {
	d.rd.Notes = append(d.rd.Notes, Note{Kind: NoteStuck, Seq: k.seq, Since: d.conn.lastMove})
	d.strike(k.seq)
	d.isolateTo = max(d.isolateTo, last.seq)
	d.rd.Drop, d.dial.at = DropStuck, now
	d.conn, d.cursor = nil, 0
}

// connLost records that the caller dropped the connection for a reason of
// its own: nobody is blamed, and what is not known handled is resent,
// isolated.
func (d *Delivery) connLost() {
	c := d.conn
	if c == nil {
		return
	}
	d.ackHandled(time.Time{})
	if _, last, ok := c.oldest(); ok {
		d.isolateTo = max(d.isolateTo, last.seq)
	}
	d.conn, d.cursor = nil, 0
}

// strike counts a strike against seq and sets it aside after MaxAttempts,
// if it is the oldest pending event (the only one removable alone).
func (d *Delivery) strike(seq uint64) {
	if d.strikes.Seq == seq {
		d.strikes.N++
	} else {
		d.strikes = Strikes{Seq: seq, N: 1}
	}
	if d.witness+1 == seq {
		d.strikes.Witness = d.witness
	}
	d.rd.SaveStrikes = true
	d.rd.Notes = append(d.rd.Notes, Note{Kind: NoteStrike, Seq: seq, N: d.strikes.N})
	if d.cfg.MaxAttempts > 0 && d.strikes.N >= d.cfg.MaxAttempts && seq == d.oldestPending() {
		d.rd.SetAside = seq
	}
}

// isolationHold says whether the next isolated event must wait at now, and
// until when: over TCP the pace; on any socket the suspect, until what was
// written before it is handled, and what follows it, until it is handled
// too.
func (d *Delivery) isolationHold(now time.Time) (time.Time, bool) {
	c := d.conn
	if !d.isolating() || c == nil || c.written == 0 {
		return time.Time{}, false
	}
	next := d.oldestPending()
	if d.cursor != 0 {
		next = d.cursor
	}
	switch s := d.suspect; {
	case s == 0 && d.kernelReads():
		at := c.lastWrite.Add(d.pace())
		return at, now.Before(at)
	case s == 0:
		return time.Time{}, false
	case c.has(s):
		return c.lingered(d.cfg.Linger), true
	case next == s:
		return c.lingered(d.cfg.Linger), !c.settled(now, d.cfg.Linger)
	}
	return time.Time{}, false
}
