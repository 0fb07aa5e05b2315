package emitter

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// delivery is the drainer's decisions without its I/O: what the receiver has
// handled, what to write next, whom to blame for failures, and how long to
// wait before dialling. Like etcd raft, it has no goroutine, socket or clock:
// the drainer steps it with what happened and when, and carries out the
// ready it returns.
type delivery struct {
	cfg deliveryConfig

	acked     uint64 // highest sequence acknowledged or set aside; only grows
	cursor    uint64 // next sequence to write; 0: from the oldest pending
	isolateTo uint64 // while anything up to it is unhandled, one event a write
	witness   uint64 // newest acknowledged sequence the shell can resend, 0: none
	strikes   strikeRecord
	tcp       tcpIsolation // see delivery_tcp.go
	empty     int          // connections in a row that failed before handling anything
	conn      *connState
	dial      dialPlan // see delivery_dial.go
}

// windowMode is how an event read by the receiver becomes handled.
type windowMode int

const (
	lastRead   windowMode = iota // only a sequential receiver's last read can be unhandled
	fixedBytes                   // handled once windowBytes more were read after it
	noWindow                     // handled once read
	kernelTook                   // TCP: a read is the kernel's; only linger proves handled
)

// deliveryConfig is what delivery needs of Options.
type deliveryConfig struct {
	mode        windowMode
	windowBytes uint64        // fixedBytes only
	linger      time.Duration // a line read this long ago, still connected, is handled
	warnAfter   time.Duration // no read for this long with bytes unread: slow
	stuckAfter  time.Duration // no read for this long inside a line: stuck
	stallAfter  time.Duration // no read for this long with bytes unread: frozen
	maxAttempts int           // strikes that set an event aside; 0: never
	batch       int           // events per write outside isolation
	backoff     time.Duration // the first pause before a dial
	maxBackoff  time.Duration // the longest pause after refused dials
	crashPause  time.Duration // the longest pause in a crash loop
	jitter      float64       // the backoff's randomization factor
}

// strikeRecord is the one event under suspicion and its strikes, kept in the
// spool so that a restart does not forget it.
type strikeRecord struct {
	seq     uint64
	n       int
	witness uint64 // the event before it, which the receiver handled
}

// msg is what the shell tells delivery happened, and when.
type msg struct {
	kind    msgKind
	now     time.Time
	lines   []line       // msgWrote
	n       int          // msgWrote: the socket memory the write took; msgRead, msgFin: SIOCOUTQ
	seq     uint64       // msgRestore, msgFirst, msgNext: the spool's oldest pending; msgSetAside: the event
	reset   bool         // msgHungUp: it closed with bytes unread
	strikes strikeRecord // msgRestore: what an earlier process saved
}

type msgKind int

const (
	msgRestore    msgKind = iota + 1 // at start: the spool's oldest pending, the saved strikes
	msgConnected                     // a connection was made
	msgFirst                         // the spool's oldest pending is seq (others expired or were dropped)
	msgNext                          // as msgFirst, and what to write next (ready.send)
	msgWrote                         // lines were written
	msgRead                          // a SIOCOUTQ reading: n bytes unread
	msgTick                          // time passed
	msgFin                           // the receiver's FIN, with n bytes unread (ready.closed)
	msgHungUp                        // the receiver hung up
	msgLost                          // the shell dropped the connection for a reason of its own
	msgSetAside                      // seq was moved to the dead letters and removed from the spool
	msgRewind                        // the spool was salvaged: write from the oldest pending
	msgNoWitness                     // the witness is not at hand
	msgDialFailed                    // a dial, or the preamble on its connection, failed
	msgAppeared                      // the socket path appeared (the receiver is binding)
)

// step is the only way into delivery: it takes one msg and returns what the
// shell must do, with the view the shell acts on until the next step.
func (d *delivery) step(m msg) ready {
	var r ready
	switch m.kind {
	case msgRestore:
		d.restore(m.seq, m.strikes)
	case msgConnected:
		d.connected(m.now)
	case msgFirst:
		d.skipTo(m.seq)
	case msgNext:
		d.skipTo(m.seq)
		r.send, r.sendOK = d.next(m.now)
	case msgWrote:
		d.wrote(m.now, m.lines, m.n)
	case msgRead:
		r = d.observed(m.now, m.n).then(d.tick(m.now))
	case msgTick:
		r = d.tick(m.now)
	case msgFin:
		r.closed = d.peerFin(m.now, m.n)
	case msgHungUp:
		r = d.hungUp(m.now, m.reset)
	case msgLost:
		r = d.lost()
		d.backOff(m.now, d.empty > 0)
	case msgDialFailed:
		r = d.lost()
		d.dialFailed(m.now)
	case msgAppeared:
		d.dial.quick, d.dial.at = quickDials, m.now
	case msgSetAside:
		r = d.setAsideDone(m.seq)
	case msgRewind:
		d.cursor = 0
	case msgNoWitness:
		d.witness = 0
	}
	r.view = d.view()
	return r
}

// ready is what the shell does after a step, in this order: acknowledge,
// set aside, save the strikes, drop the connection, log; then it dials no
// sooner than view.dialAt.
type ready struct {
	ackThrough uint64 // acknowledge the spool through this sequence; 0: nothing
	setAside   uint64 // move this sequence (the oldest pending) to the dead letters
	saveStrike bool   // strikes changed: persist view.strikes
	abandon    bool   // close the connection
	closed     bool   // msgFin: the FIN ends the connection
	notes      []note
	send       sendPlan // msgNext: what to write, if sendOK
	sendOK     bool
	view
}

// then is r followed by o, as one ready.
func (r ready) then(o ready) ready {
	r.ackThrough = max(r.ackThrough, o.ackThrough)
	if o.setAside != 0 {
		r.setAside = o.setAside
	}
	r.saveStrike = r.saveStrike || o.saveStrike
	r.abandon = r.abandon || o.abandon
	r.notes = append(r.notes, o.notes...)
	return r
}

// view is what the shell may know of delivery's state.
type view struct {
	acked    uint64       // acknowledged or set aside through
	strikes  strikeRecord // the suspect, to persist
	unread   int          // the last SIOCOUTQ reading on this connection
	frozen   bool         // the receiver reads nothing, connected
	reading  bool         // written bytes wait to be read
	readSome bool         // it has read something on this connection
	wantsFin bool         // look for the receiver's FIN (TCP)
	wakes    bool         // a msgTick has something to do at wake
	wake     time.Time
	dialAt   time.Time // dial no sooner
	early    bool      // the socket path appearing may end the wait for dialAt
}

func (d *delivery) view() view {
	v := view{acked: d.acked, strikes: d.strikes, wantsFin: d.wantsFin(),
		dialAt: d.dial.at, early: d.dial.early}
	if c := d.conn; c != nil {
		v.unread, v.frozen, v.reading, v.readSome = c.unread, c.frozen, !c.allRead(), c.read > 0
	}
	v.wake, v.wakes = d.wakeAt()
	return v
}

// note is something the shell logs.
type note struct {
	kind  noteKind
	seq   uint64
	n     int
	since time.Time
}

type noteKind int

const (
	noteStrike    noteKind = iota + 1 // seq earned strike n
	noteFrozen                        // the receiver read nothing since
	noteCrashLoop                     // the receiver failed n times in a row before handling anything
	noteStuck                         // it stopped inside seq: cannot read it
	noteSlow                          // it read nothing since, for warnAfter
)

// sendPlan is what the shell writes next: max events from from (0: the
// oldest pending), or the witness alone if resendWitness is not 0.
type sendPlan struct {
	from          uint64
	max           int
	resendWitness uint64
}

func newDelivery(cfg deliveryConfig) *delivery {
	bo := &backoff.ExponentialBackOff{InitialInterval: cfg.backoff, RandomizationFactor: cfg.jitter,
		Multiplier: 2, MaxInterval: max(cfg.crashPause, cfg.maxBackoff), Stop: backoff.Stop, Clock: noClock{}}
	bo.Reset()
	return &delivery{cfg: cfg, dial: dialPlan{bo: bo}}
}

// restore takes the spool's oldest pending sequence and saved strikes.
func (d *delivery) restore(oldest uint64, s strikeRecord) {
	if oldest > 0 {
		d.acked = oldest - 1
	}
	if s.seq >= oldest && s.n > 0 {
		d.strikes = s
		d.isolateTo = max(d.isolateTo, s.seq)
		d.tcp.stopAt = s.seq
		if s.witness != 0 && s.witness+1 == oldest {
			d.witness = s.witness
		}
	}
}

func (d *delivery) connected(now time.Time) {
	d.conn = &connState{start: now, lastMove: now}
	d.cursor = 0
	d.dial.quick = 0
}

// next says what to write at now; ok false means nothing: not connected,
// frozen, or isolating and the last write is unread (or held, over TCP).
func (d *delivery) next(now time.Time) (sendPlan, bool) {
	c := d.conn
	if c == nil || c.frozen {
		return sendPlan{}, false
	}
	if !d.isolating() {
		d.tcp.pace = 0
		return sendPlan{from: d.cursor, max: d.cfg.batch}, true
	}
	if !c.allRead() {
		return sendPlan{}, false
	}
	if _, hold := d.tcpHold(now); hold {
		return sendPlan{}, false
	}
	if c.written == 0 && d.witness != 0 && d.witness+1 == d.oldestPending() {
		// Alone first: the receiver reading the next one proves it
		// handled the one before on this connection.
		return sendPlan{resendWitness: d.witness}, true
	}
	return sendPlan{from: d.cursor, max: 1}, true
}

// isolating reports whether the next write carries one event only.
func (d *delivery) isolating() bool { return d.isolateTo > d.acked }

func (d *delivery) oldestPending() uint64 { return d.acked + 1 }

// line is one event written: its sequence and size with the newline.
type line struct {
	seq  uint64
	size int
}

// wrote records a write(2) at now of lines, which took mem bytes of the
// socket's memory (0: unknown, then the payload is taken, a lower bound).
func (d *delivery) wrote(now time.Time, lines []line, mem int) {
	c := d.conn
	if c == nil || len(lines) == 0 {
		return
	}
	proven := d.provenBefore(now, len(lines))
	c.add(lines, mem, d.acked)
	c.lastWrite = now
	c.lines[len(c.lines)-1].proven = proven
	if last := lines[len(lines)-1].seq; last > d.acked {
		d.cursor = last + 1
	}
}

// setAsideDone records that the shell moved seq to the dead letters.
func (d *delivery) setAsideDone(seq uint64) ready {
	var r ready
	if seq == d.acked+1 {
		d.acked = seq
		r.saveStrike = d.clearStrikes(seq)
		d.tcpSetAside(seq)
		if d.conn != nil {
			d.conn.dropThrough(seq)
		}
	}
	return r
}

// ackedThrough records that the spool acknowledged through seq.
func (d *delivery) ackedThrough(seq uint64, witness bool) bool {
	if seq <= d.acked {
		return false
	}
	d.acked = seq
	if witness {
		d.witness = seq
	}
	if d.tcp.stopAt <= seq {
		d.tcp.stopAt = 0
	}
	if d.conn != nil {
		d.conn.dropThrough(seq)
	}
	return d.clearStrikes(seq)
}

// clearStrikes forgets a suspect at or before seq and reports if there was.
func (d *delivery) clearStrikes(seq uint64) bool {
	if d.strikes.seq == 0 || d.strikes.seq > seq {
		return false
	}
	d.strikes = strikeRecord{}
	return true
}

// deliveryConfigOf maps Options (defaults filled) to delivery's settings.
func deliveryConfigOf(o *Options) deliveryConfig {
	c := deliveryConfig{mode: lastRead, linger: o.ReplayLinger, warnAfter: o.WriteTimeout,
		stuckAfter: o.WriteTimeout, stallAfter: o.StallTimeout, maxAttempts: max(o.MaxAttempts, 0),
		batch: o.BatchEvents, backoff: o.MinBackoff, maxBackoff: o.MaxBackoff,
		crashPause: max(o.MaxBackoff, crashLoopMaxPause), jitter: 0.5}
	switch {
	case o.ReplayWindow < 0 || o.AckOnWrite:
		c.mode = noWindow
	case o.ReplayWindow > 0:
		c.mode, c.windowBytes = fixedBytes, uint64(o.ReplayWindow)
	case o.Network == "tcp":
		c.mode = kernelTook
	}
	return c
}
