package delivery

import "time"

// next says what to write at now; ok false means nothing: not connected,
// frozen, or isolating and the last write is unread (or held: the pace over
// TCP, the suspect on any socket).
func (d *Delivery) next(now time.Time) (Send, bool) {
	c := d.conn
	if c == nil || c.frozen {
		return Send{}, false
	}
	if !d.isolating() {
		d.tcp.pace = 0
		return Send{From: d.cursor, Max: d.cfg.Batch}, true
	}
	if !c.allRead() {
		return Send{}, false
	}
	if _, hold := d.isolationHold(now); hold {
		return Send{}, false
	}
	if c.written == 0 && d.witness != 0 && d.witness+1 == d.oldestPending() {
		// Alone first: the receiver reading the next one proves it
		// handled the one before on this connection.
		return Send{ResendWitness: d.witness}, true
	}
	return Send{From: d.cursor, Max: 1}, true
}

// isolating reports whether the next write carries one event only.
func (d *Delivery) isolating() bool { return d.isolateTo > d.acked }

func (d *Delivery) oldestPending() uint64 { return d.acked + 1 }

// wrote records a write(2) at now of lines, which took mem bytes of the
// socket's memory (0: unknown, then the payload is taken, a lower bound).
func (d *Delivery) wrote(now time.Time, lines []Line, mem int) {
	c := d.conn
	if c == nil || len(lines) == 0 {
		return
	}
	// One event after every event here was handled: evidence for a strike
	// (over TCP any such event; on a Unix socket the suspect).
	proven := d.isolating() && len(lines) == 1 && (d.kernelReads() || lines[0].Seq == d.suspect) &&
		c.settled(now, d.cfg.Linger)
	c.add(lines, mem, d.acked)
	c.lastWrite = now
	c.lines[len(c.lines)-1].proven = proven
	if last := lines[len(lines)-1].Seq; last > d.acked {
		d.cursor = last + 1
	}
}

// setAsideDone records that the caller moved seq to the dead letters.
func (d *Delivery) setAsideDone(seq uint64) {
	if seq != d.acked+1 {
		return
	}
	d.acked = seq
	d.rd.SaveStrikes = d.clearStrikes(seq) || d.rd.SaveStrikes
	if d.suspect <= seq {
		d.suspect = 0
	}
	if d.kernelReads() {
		// The receiver died on it each time, so it handled nothing after
		// it: the isolation over TCP ends.
		d.isolateTo, d.tcp, d.suspect = min(d.isolateTo, seq), tcpIsolation{}, 0
	}
	if d.conn != nil {
		d.conn.dropThrough(seq)
	}
}

// ackedThrough records that the spool acknowledged through seq.
func (d *Delivery) ackedThrough(seq uint64, witness bool) bool {
	if seq <= d.acked {
		return false
	}
	d.acked = seq
	if witness {
		d.witness = seq
	}
	if d.suspect <= seq {
		d.suspect = 0
	}
	if d.conn != nil {
		d.conn.dropThrough(seq)
	}
	return d.clearStrikes(seq)
}

// clearStrikes forgets a suspect at or before seq and reports if there was.
func (d *Delivery) clearStrikes(seq uint64) bool {
	if d.strikes.Seq == 0 || d.strikes.Seq > seq {
		return false
	}
	d.strikes = Strikes{}
	return true
}

// ackHandled acknowledges what the connection shows handled at now (zero:
// by reads alone), keeping the witness. An acknowledgement is proof of
// handling where the connection shows the receiver's reads and the mode
// waits for them.
func (d *Delivery) ackHandled(now time.Time) {
	if d.conn == nil {
		return
	}
	through := d.conn.handledThrough(&d.cfg, now)
	if through > d.acked {
		d.rd.AckThrough = through
		d.rd.Proven = d.conn.reads && d.cfg.Mode != NoWindow
		d.rd.SaveStrikes = d.ackedThrough(through, true) || d.rd.SaveStrikes
	}
}

// observed is a SIOCOUTQ reading of unread bytes at now.
func (d *Delivery) observed(now time.Time, unread int) {
	if d.conn == nil {
		return
	}
	d.conn.observe(now, unread)
	d.ackHandled(now)
}
