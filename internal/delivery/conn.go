package delivery

import "time"

// connState is what delivery knows of one connection: the lines written on
// it not yet acknowledged, and how far the receiver has read them.
//
// A Unix socket frees a write's buffer only once it is read whole, so a
// write is read once the writes after it account for all the memory
// SIOCOUTQ shows held. Memory is never overestimated, so what was read errs
// low. Offsets are payload bytes from the connection's start.
type connState struct {
	start     time.Time
	lastMove  time.Time // when the receiver was last seen reading
	lines     []sentLine
	writes    []sentWrite
	memHeld   int       // sum of writes' mem
	unread    int       // the last SIOCOUTQ reading, plus what was written since
	written   uint64    // payload bytes written
	read      uint64    // payload bytes known read: whole writes
	lastFrom  uint64    // the last read began at or after it: a point seen with nothing unread, since passed
	emptyAt   uint64    // read when a reading last showed nothing unread (the receiver had taken it all)
	partial   bool      // the oldest unread write is partly read
	handled   bool      // an event was shown handled on this connection
	slow      bool      // read nothing for WarnAfter (noted)
	frozen    bool      // read nothing for StallAfter (noted): write nothing new
	lastWrite time.Time // when the last write was made
	fin       finState  // KernelTook only
	reads     bool      // the socket shows the receiver's reads
}

type sentLine struct {
	seq        uint64
	start, end uint64
	readAt     time.Time // zero until read whole
	witness    bool      // resent, already acknowledged: proof only
	proven     bool      // written alone once all before it here were handled
}

type sentWrite struct {
	end     uint64
	mem     int
	payload int
	alone   bool // written when everything before it was read
}

// oneBuffer is the largest write a Unix socket surely keeps in one buffer:
// only a larger one can be seen read in part.
const oneBuffer = 32 << 10

// add records a write of lines that took mem bytes of socket memory.
func (c *connState) add(lines []Line, mem int, acked uint64) {
	payload := 0
	for _, l := range lines {
		start := c.written
		c.written += uint64(l.Size)
		payload += l.Size
		c.lines = append(c.lines, sentLine{seq: l.Seq, start: start, end: c.written, witness: l.Seq <= acked})
	}
	mem = max(mem, payload)
	alone := c.read == c.written-uint64(payload)
	c.writes = append(c.writes, sentWrite{end: c.written, mem: mem, payload: payload, alone: alone})
	c.memHeld += mem
	c.unread += mem
}

// observe takes a SIOCOUTQ reading and reports whether the receiver read.
func (c *connState) observe(now time.Time, unread int) bool {
	moved := unread < c.unread
	c.unread = unread
	newRead, n := c.read, 0
	for n < len(c.writes) && c.memHeld-c.writes[n].mem >= unread {
		newRead = c.writes[n].end
		c.memHeld -= c.writes[n].mem
		n++
	}
	c.writes = append(c.writes[:0], c.writes[n:]...) // in place: the next write reuses it
	// Less held than the writes account for: the oldest was read in part.
	c.partial = len(c.writes) > 0 && c.writes[0].payload > oneBuffer && unread < c.memHeld
	if newRead > c.read {
		// Bytes past a point where the queue was seen empty were written
		// after the read that took everything before it: a later read.
		// Two buffers freed between two readings may be one read(2).
		c.lastFrom, c.read = max(c.lastFrom, c.emptyAt), newRead
		for i := range c.lines {
			if c.lines[i].end <= c.read && c.lines[i].readAt.IsZero() {
				c.lines[i].readAt = now
			}
		}
	}
	if c.partial && c.writes[0].alone {
		// Written after everything before it was read, it was begun by a
		// read of its own.
		c.lastFrom = c.read
	}
	if len(c.writes) == 0 {
		c.emptyAt = c.read
	}
	if moved {
		c.lastMove, c.frozen, c.slow = now, false, false
	}
	return moved
}

func (c *connState) allRead() bool { return c.read == c.written }

// isHandled reports whether the receiver has handled line l, by cfg, at now.
func (c *connState) isHandled(l sentLine, cfg *Config, now time.Time) bool {
	if l.end > c.read {
		return false
	}
	if !now.IsZero() && cfg.Linger > 0 && now.Sub(l.readAt) >= cfg.Linger {
		return true // still connected that long after reading it
	}
	switch cfg.Mode {
	case LastRead:
		return l.end <= c.lastFrom // a later read began after it was read whole
	case FixedBytes:
		return l.end+cfg.WindowBytes <= c.read
	case KernelTook:
		return false
	}
	return true
}

// handledThrough returns the last sequence of the handled prefix of lines,
// 0 if none. A zero now leaves linger out, for a receiver that is gone.
func (c *connState) handledThrough(cfg *Config, now time.Time) uint64 {
	var through uint64
	for _, l := range c.lines {
		if !c.isHandled(l, cfg, now) {
			break
		}
		c.handled = true
		if !l.witness {
			through = l.seq
		}
	}
	return through
}

// dropThrough forgets the lines up to seq: acknowledged.
func (c *connState) dropThrough(seq uint64) {
	i := 0
	for i < len(c.lines) && c.lines[i].seq <= seq {
		i++
	}
	c.lines = append(c.lines[:0], c.lines[i:]...) // in place: the next write reuses it
}

// oldest returns the oldest unacknowledged non-witness line, and the newest.
func (c *connState) oldest() (first, last sentLine, ok bool) {
	for _, l := range c.lines {
		if !l.witness {
			return l, c.lines[len(c.lines)-1], true
		}
	}
	return sentLine{}, sentLine{}, false
}

// firstUnread returns the first line not read whole.
func (c *connState) firstUnread() (sentLine, bool) {
	for _, l := range c.lines {
		if l.end > c.read {
			return l, true
		}
	}
	return sentLine{}, false
}

// finState is a connection's FIN, over TCP.
type finState struct {
	seen    bool   // the receiver closed having read all its kernel took
	read    uint64 // what its kernel had taken then
	ignored bool   // a receive-only peer: its FIN says nothing
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
		if t := l.readAt.Add(linger); t.After(at) {
			at = t
		}
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
