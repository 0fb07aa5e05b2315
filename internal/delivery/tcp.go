package delivery

import "time"

// Isolating over TCP, where a read is the receiver's kernel's and proves
// nothing handled: only Linger does. After a failure events go one at a
// time, paced, so that a dying receiver's FIN names the last event it read:
// the suspect. The suspect then goes alone once everything before it is
// handled, and a FIN right after it is a strike (docs/delivery.md, "Poison
// events and the dead-letter file").

// tcpPace is the first pause between two isolated events over TCP.
const tcpPace = 10 * time.Millisecond

// tcpIsolation is what isolating over TCP keeps across connections, beside
// the suspect (Delivery.suspect).
type tcpIsolation struct {
	pace time.Duration // between two isolated events; 0: tcpPace
}

func (d *Delivery) kernelReads() bool { return d.cfg.Mode == KernelTook }

func (d *Delivery) pace() time.Duration {
	if d.tcp.pace == 0 {
		return tcpPace
	}
	return d.tcp.pace
}

// wantsFin reports whether the caller should look for the receiver's FIN.
func (d *Delivery) wantsFin() bool {
	c := d.conn
	return d.kernelReads() && d.isolating() && c != nil && !c.fin.seen && !c.fin.ignored
}

// peerFin records the receiver's FIN seen at now, with its kernel's unread
// count; the FIN ends the connection if the receiver took an event.
func (d *Delivery) peerFin(now time.Time, unread int) {
	c := d.conn
	if c == nil {
		return
	}
	c.observe(now, unread)
	if !c.tookEvent() {
		c.fin.ignored = true
		return
	}
	c.fin.seen, c.fin.read = true, c.read
	d.rd.Drop = DropFin
}

// hungUpTCP blames on a hang-up while isolating over TCP: a strike for the
// suspect read last; else the last event read before a FIN becomes the
// suspect, or the search starts again with the pace doubled.
func (d *Delivery) hungUpTCP(c *connState) {
	k, last, ok := c.oldest()
	if !d.isolating() || !ok || !c.tookEvent() {
		return // it took nothing: it says nothing of any event
	}
	switch s := d.suspect; {
	case s != 0 && c.has(s):
		if c.fin.seen && k.seq == s && last.seq == s && k.proven && k.end == c.fin.read {
			d.strike(s)
		}
		return
	case s != 0:
		d.suspect = 0
	case c.fin.seen:
		for i := len(c.lines) - 1; i >= 0; i-- {
			if l := c.lines[i]; !l.witness && l.end <= c.fin.read {
				d.suspect = l.seq
				return
			}
		}
	}
	d.tcp.pace = min(2*d.pace(), max(d.cfg.Linger, tcpPace))
}
