package emitter

import "time"

// Isolating over TCP, where a read is the receiver's kernel's and proves
// nothing handled: only ReplayLinger does. After a failure events go one at
// a time, paced, so that a dying receiver's FIN names the last event it
// read: the suspect. The suspect then goes alone once everything before it
// is handled, and a FIN right after it is a strike (docs/delivery.md,
// "Poison events and the dead-letter file").

// tcpPace is the first pause between two isolated events over TCP.
const tcpPace = 10 * time.Millisecond

// tcpIsolation is what isolating over TCP keeps across connections.
type tcpIsolation struct {
	stopAt uint64        // the suspect: written alone, after all before it is handled
	pace   time.Duration // between two isolated events; 0: tcpPace
}

// finState is a connection's FIN, over TCP.
type finState struct {
	seen    bool   // the receiver closed having read all its kernel took
	read    uint64 // what its kernel had taken then
	ignored bool   // a receive-only peer: its FIN says nothing
}

func (d *delivery) kernelReads() bool { return d.cfg.mode == kernelTook }

func (d *delivery) pace() time.Duration {
	if d.tcp.pace == 0 {
		return tcpPace
	}
	return d.tcp.pace
}

// tcpHold says whether the next isolated event over TCP must wait at now,
// and until when: the pace, or until what was written before (or the
// suspect itself) is handled.
func (d *delivery) tcpHold(now time.Time) (time.Time, bool) {
	c := d.conn
	if !d.kernelReads() || !d.isolating() || c == nil || c.written == 0 {
		return time.Time{}, false
	}
	next := d.oldestPending()
	if d.cursor != 0 {
		next = d.cursor
	}
	switch s := d.tcp.stopAt; {
	case s == 0:
		at := c.lastWrite.Add(d.pace())
		return at, now.Before(at)
	case c.has(s):
		return c.lingered(d.cfg.linger), true
	case next == s:
		return c.lingered(d.cfg.linger), !c.settled(now, d.cfg.linger)
	}
	return time.Time{}, false
}

// provenBefore reports whether a write of n events at now is one event
// after every event on this connection was handled: evidence for a strike.
func (d *delivery) provenBefore(now time.Time, n int) bool {
	c := d.conn
	return d.kernelReads() && d.isolating() && n == 1 && c.settled(now, d.cfg.linger)
}

// wantsFin reports whether the shell should look for the receiver's FIN.
func (d *delivery) wantsFin() bool {
	c := d.conn
	return d.kernelReads() && d.isolating() && c != nil && !c.fin.seen && !c.fin.ignored
}

// peerFin records the receiver's FIN seen at now, with its kernel's unread
// count; it reports whether that ends the connection.
func (d *delivery) peerFin(now time.Time, unread int) bool {
	c := d.conn
	if c == nil {
		return false
	}
	c.observe(now, unread)
	if !c.tookEvent() {
		c.fin.ignored = true
		return false
	}
	c.fin.seen, c.fin.read = true, c.read
	return true
}

// hungUpTCP blames on a hang-up while isolating over TCP: a strike for the
// suspect read last; else the last event read before a FIN becomes the
// suspect, or the search starts again with the pace doubled.
func (d *delivery) hungUpTCP(r ready, c *connState) ready {
	k, last, ok := c.oldest()
	if !d.isolating() || !ok || !c.tookEvent() {
		return r // it took nothing: it says nothing of any event
	}
	switch s := d.tcp.stopAt; {
	case s != 0 && c.has(s):
		if c.fin.seen && k.seq == s && last.seq == s && k.proven && k.end == c.fin.read {
			r = d.strike(r, s)
		}
		return r
	case s != 0:
		d.tcp.stopAt = 0
	case c.fin.seen:
		for i := len(c.lines) - 1; i >= 0; i-- {
			if l := c.lines[i]; !l.witness && l.end <= c.fin.read {
				d.tcp.stopAt = l.seq
				return r
			}
		}
	}
	d.tcp.pace = min(2*d.pace(), max(d.cfg.linger, tcpPace))
	return r
}

// tcpSetAside ends the isolation over TCP once its suspect is set aside:
// the receiver died on it each time, so it handled nothing after it.
func (d *delivery) tcpSetAside(seq uint64) {
	if d.kernelReads() {
		d.isolateTo, d.tcp = min(d.isolateTo, seq), tcpIsolation{}
	}
}

// has reports whether seq is written here and not yet acknowledged.
func (c *connState) has(seq uint64) bool {
	for _, l := range c.lines {
		if l.seq == seq && !l.witness {
			return true
		}
	}
	return false
}

// settled reports whether the receiver handled everything written here,
// and something was.
func (c *connState) settled(now time.Time, linger time.Duration) bool {
	for _, l := range c.lines {
		if !l.witness || l.readAt.IsZero() || now.Before(l.readAt.Add(linger)) {
			return false
		}
	}
	return c.written > 0
}

// lingered is when every line written here will have been taken linger ago.
func (c *connState) lingered(linger time.Duration) time.Time {
	var at time.Time
	for _, l := range c.lines {
		at = later(at, l.readAt.Add(linger))
	}
	return at
}

// tookEvent reports whether the receiver's kernel took a non-witness event.
func (c *connState) tookEvent() bool {
	for _, l := range c.lines {
		if !l.witness && l.end <= c.read {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
