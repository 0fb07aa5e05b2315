package emitter

import (
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/evspool/evspool/internal/sockwait"
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
	tcp       tcpIsolation // see tcpIsolation
	empty     int          // connections in a row that failed before handling anything
	conn      *connState
	dial      dialPlan // see dialPlan
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
	maxAge      time.Duration // an event older than this is expired, not sent; 0: never
	maxHold     time.Duration // a hold of the live gate longer than this is released; 0: never
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
	lines   []line          // msgWrote
	ages    []time.Duration // msgBatch: the age of each event of the batch read, in order
	held    time.Duration   // msgHeld: how long the live gate has been held (boot clock)
	n       int             // msgWrote: the socket memory the write took; msgRead, msgFin: SIOCOUTQ
	seq     uint64          // msgRestore, msgFirst, msgNext: the spool's oldest pending; msgSetAside: the event; msgBatch: the batch's first
	reset   bool            // msgHungUp: it closed with bytes unread
	strikes strikeRecord    // msgRestore: what an earlier process saved
}

type msgKind int

const (
	msgRestore    msgKind = iota + 1 // at start: the spool's oldest pending, the saved strikes
	msgConnected                     // a connection was made
	msgFirst                         // the spool's oldest pending is seq (others expired or were dropped)
	msgNext                          // as msgFirst, and what to write next (ready.send)
	msgBatch                         // the batch ready.send asked for was read, with its ages (ready.keep, ready.expire)
	msgHeld                          // the live gate is held, for m.held (ready.release, ready.holdLeft)
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
	case msgBatch:
		r.keep, r.expire = d.aged(m.seq, m.ages)
	case msgHeld:
		r.release = d.cfg.maxHold > 0 && m.held >= d.cfg.maxHold
		if d.cfg.maxHold > 0 && !r.release {
			r.holdLeft = d.cfg.maxHold - m.held
		}
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
		r = d.connLost()
		d.backOff(m.now, d.empty > 0)
	case msgDialFailed:
		r = d.connLost()
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
	r.view = d.view(m.now)
	return r
}

// ready is what the shell does after a step, in this order: log,
// acknowledge, set aside, save the strikes, drop the connection; then it
// dials no sooner than view.dialAt.
type ready struct {
	ackThrough uint64 // acknowledge the spool through this sequence; 0: nothing
	setAside   uint64 // move this sequence (the oldest pending) to the dead letters
	saveStrike bool   // strikes changed: persist view.strikes
	abandon    bool   // close the connection
	closed     bool   // msgFin: the FIN ends the connection
	notes      []note
	send       sendPlan // msgNext: what to write, if sendOK
	sendOK     bool
	keep       int           // msgBatch: write the batch's first keep events
	expire     int           // msgBatch: expire the batch's first expire events, then read again
	release    bool          // msgHeld: the hold passed MaxHold: release it
	holdLeft   time.Duration // msgHeld: look again after this (0: no limit)
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
	inFlight int          // payload bytes written on this connection and not known read
	frozen   bool         // the receiver reads nothing, connected
	reading  bool         // written bytes wait to be read
	readSome bool         // it has read something on this connection
	wantsFin bool         // look for the receiver's FIN (TCP)
	wakes    bool         // a msgTick has something to do at wake
	wake     time.Time
	poll     time.Duration // while reading: how long until the next look (pollAfter)
	dialAt   time.Time     // dial no sooner
	early    bool          // the socket path appearing may end the wait for dialAt
}

func (d *delivery) view(now time.Time) view {
	v := view{acked: d.acked, strikes: d.strikes, wantsFin: d.wantsFin(),
		dialAt: d.dial.at, early: d.dial.early}
	if c := d.conn; c != nil {
		v.unread, v.frozen, v.reading, v.readSome = c.unread, c.frozen, !c.allRead(), c.read > 0
		v.inFlight = int(c.written - c.read)
		v.poll = idleCheck
		if !c.frozen {
			v.poll = pollAfter(now.Sub(later(c.lastMove, c.lastWrite)))
		}
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
	// One event after every event here was handled: evidence for a strike.
	proven := d.kernelReads() && d.isolating() && len(lines) == 1 && c.settled(now, d.cfg.linger)
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
		if d.kernelReads() {
			// The receiver died on it each time, so it handled nothing after
			// it: the isolation over TCP ends.
			d.isolateTo, d.tcp = min(d.isolateTo, seq), tcpIsolation{}
		}
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
		crashPause: max(o.MaxBackoff, crashLoopMaxPause), jitter: 0.5, maxAge: max(o.MaxAge, 0), maxHold: max(o.MaxHold, 0)}
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

// ackHandled acknowledges what the connection shows handled at now (zero:
// by reads alone), keeping the witness.
func (d *delivery) ackHandled(now time.Time) ready {
	var r ready
	if d.conn == nil {
		return r
	}
	through := d.conn.handledThrough(&d.cfg, now)
	if through > d.acked {
		r.ackThrough = through
		r.saveStrike = d.ackedThrough(through, true)
	}
	return r
}

// observed is a SIOCOUTQ reading of unread bytes at now.
func (d *delivery) observed(now time.Time, unread int) ready {
	if d.conn == nil {
		return ready{}
	}
	d.conn.observe(now, unread)
	return d.ackHandled(now)
}

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
		c.observe(now, 0) // it read everything
	}
	r := d.ackHandled(time.Time{}) // gone: only its reads prove anything handled
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
	r := d.ackHandled(now)
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

// connLost records that the shell dropped the connection for a reason of its
// own: nobody is blamed, and what is not known handled is resent, isolated.
func (d *delivery) connLost() ready {
	c := d.conn
	if c == nil {
		return ready{}
	}
	r := d.ackHandled(time.Time{})
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

// idleCheck is how often the shell looks again at a frozen receiver, and at
// one it idles beside while something pending needs it (idlePoll).
const idleCheck = 100 * time.Millisecond

// pollAfter is the longest pause between two looks at a receiver that has
// not read for quiet (or waited for room that long): a tenth of it, within
// sockwait.DefaultMaxInterval and idleCheck. A receiver that stopped reading
// is looked at less and less often.
func pollAfter(quiet time.Duration) time.Duration {
	return min(max(quiet/10, sockwait.DefaultMaxInterval), idleCheck)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// aged applies MaxAge to a batch just read: the expired lines at the
// spool's head (after acked) are expired and the spool read again; otherwise
// the batch is cut before its first expired line, which waits for its turn
// (an earlier boot's events, aged on the wall clock, may expire out of
// order). Expired lines behind unacknowledged ones wait until they reach the
// head: expiring them would remove those too.
func (d *delivery) aged(first uint64, ages []time.Duration) (keep, expire int) {
	old := 0
	for d.cfg.maxAge > 0 && old < len(ages) && ages[old] > d.cfg.maxAge {
		old++
	}
	switch {
	case old > 0 && first > d.acked+1:
		return 0, 0
	case old > 0:
		return 0, old
	}
	for i, a := range ages {
		if d.cfg.maxAge > 0 && a > d.cfg.maxAge {
			return i, 0
		}
	}
	return len(ages), 0
}
