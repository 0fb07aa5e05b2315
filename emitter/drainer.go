package emitter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/pathwatch"
	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// idleCheck is how often an idle drainer looks again while something
// pending needs it (see idlePoll).
const idleCheck = 100 * time.Millisecond

// drainer is the one goroutine that owns the connection: the I/O shell
// around delivery, which makes every decision. Others talk to it through
// wake (a notify channel of capacity 1) and stop.
type drainer struct {
	addr  string
	opts  *Options // opts.Clock: every wait and every now
	spool *wal.WAL
	ctx   context.Context
	ctl   control // how other goroutines reach the run goroutine

	// Owned by the run goroutine. Every decision is dv's; the rest is I/O.
	dv    *delivery // stepped through step, never read
	view  view      // delivery's state as of its last step
	w     wire
	logs  logs
	scans sync.WaitGroup // reader scans in flight (peer.go), waited for at stop

	pub shared // read by Emitter's methods on other goroutines
}

// control is how other goroutines wake and stop the run goroutine.
type control struct {
	wake   chan struct{}
	readTo atomic.Uint64 // newest sequence read on this connection (notifyFor)
	cancel context.CancelFunc
	done   chan struct{}
}

// logs are the drainer's rate-limited warnings.
type logs struct {
	warns warns
	drops dropLog
	out   outage
	aged  expiredLog // MaxAge
}

// shared is the drainer's state that Emitter's methods read or change.
type shared struct {
	pre      preambleState // see preamble.go
	health   health        // see health.go
	gate     gate          // see gate.go
	mu       sync.Mutex
	progress chan struct{} // closed and replaced after each ack
	link     linkStats
}

// wire is the connection, what reads it, and what the drainer keeps of it.
type wire struct {
	conn   net.Conn
	waiter *sockwait.Waiter
	unhook func() bool
	buf    []byte
	unix   bool     // conn is a Unix socket
	room   sendRoom // see awaitRoom
	// hup is closed once the socket becomes readable (the receiver hung up
	// or sent something); nil once seen, and the connection is then polled.
	hup  <-chan struct{}
	poll Timer // times an idle drainer's next look, reused

	held   held
	peer   peerNote         // see peer.go
	preGen uint64           // the gate's generation at this connection's last preamble
	watch  *pathwatch.Watch // the socket's directory, while waiting to dial (waitDial)
}

// sendRoom is what earlier readings prove about a Unix socket's send buffer:
// its size, and an upper bound of what it holds (the last SIOCOUTQ reading,
// as only the drainer writes). ok is false when either is unknown.
type sendRoom struct {
	sndbuf, queued int
	ok             bool
	readings       int // SO_MEMINFO readings taken on this connection
}

// held is what the shell keeps of the events delivery tracks by number.
type held struct {
	sent    []wal.Entry // written, not yet acknowledged: the witness comes from here
	witness wal.Entry   // the newest acknowledged event, resent as proof
}

// warns rate-limits the drainer's warnings.
type warns struct {
	delivery   reporter // slow, frozen and crash-loop receivers
	deadLetter reporter
	preamble   reporter
}

type linkStats struct {
	connected               bool
	connects                uint64
	dialErrors, writeErrors uint64
	stalls                  uint64
	delivered               uint64
	deadLettered            uint64
	lastErr                 string
	lastErrAt               time.Time
}

func newDrainer(addr string, opts *Options, spool *wal.WAL) *drainer {
	dropped := spool.Stats().DroppedOldest.Events // drops of earlier runs are not news
	ctx, cancel := context.WithCancel(context.Background())
	d := &drainer{
		addr: addr, opts: opts, spool: spool, ctx: ctx,
		ctl: control{wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})},
		dv:  newDelivery(deliveryConfigOf(opts)),
		pub: shared{health: health{clk: opts.Clock, base: opts.Clock.Now()}, progress: make(chan struct{})},
		logs: logs{
			drops: dropLog{seen: dropped, rep: newReporter(opts)},
			aged:  expiredLog{rep: newReporter(opts)},
			out:   outage{addr: addr, rep: newReporter(opts), log: opts.Logger},
			warns: warns{delivery: newReporter(opts), deadLetter: newReporter(opts), preamble: newReporter(opts)},
		},
	}
	d.restoreStrikes()
	d.openPeerNotes()
	return d
}

// notifyFor wakes the drainer for events committed through last, unless it
// has read them already: the callers of one group commit then wake it once,
// not once each. This is safe because the drainer idles only after a Read
// found nothing.
func (d *drainer) notifyFor(last uint64) {
	if last > d.ctl.readTo.Load() {
		d.notify()
	}
}

func (d *drainer) noteRead(entries []wal.Entry) {
	if len(entries) > 0 {
		d.ctl.readTo.Store(max(d.ctl.readTo.Load(), entries[len(entries)-1].Seq))
	}
}

func (d *drainer) notify() {
	select {
	case d.ctl.wake <- struct{}{}:
	default:
	}
}

func (d *drainer) stop() { d.ctl.cancel() }

// step tells delivery m at the clock's now and carries out its ready.
func (d *drainer) step(m msg) (ready, error) {
	m.now = d.opts.Clock.Now()
	r := d.dv.step(m)
	d.view = r.view
	return r, d.apply(r)
}

func (d *drainer) run() {
	defer close(d.ctl.done)
	defer d.scans.Wait()
	defer d.disconnect()
	defer d.closeWatch()
	defer d.closeNotes()
	d.adoptPeerMark()
	for d.ctx.Err() == nil {
		d.pub.health.beat()
		d.checkDrops(false)
		d.takeReader(false)
		if d.w.conn == nil && !d.connect() {
			return
		}
		if !d.passGate() {
			continue // stopped, or the connection was lost while held (gate.go)
		}
		n, err := d.sendBatch()
		if err != nil {
			d.fail(err)
			continue
		}
		if n > 0 {
			continue
		}
		if !d.view.frozen {
			d.logs.out.up(d.spool.Len) // connected, nothing to send: the outage is over
		}
		d.idle()
	}
}

// idle waits for new events, delivery's next deadline, the socket becoming
// readable or, if idlePoll, the next look. Alive counts it as not wedged.
func (d *drainer) idle() {
	expiry, stop := d.deadlineTimer()
	defer stop()
	var poll <-chan time.Time
	if d.idlePoll() {
		if d.w.poll == nil {
			d.w.poll = d.opts.Clock.NewTimer(idleCheck)
		} else {
			d.w.poll.Reset(idleCheck)
		}
		defer d.w.poll.Stop()
		poll = d.w.poll.C()
	}
	d.pub.health.idle(true)
	defer d.pub.health.idle(false)
	select {
	case <-d.ctl.wake:
	case <-expiry:
		d.onDeadline()
	case <-poll:
		d.onIdleCheck()
	case <-d.w.hup:
		d.w.hup = nil
		d.checkIdle()
	case <-d.ctx.Done():
	}
}

// idlePoll reports whether an idle drainer must look again after idleCheck:
// the receiver has bytes unread or is frozen, the socket cannot be watched,
// the receiver note is unfinished, or acks wait to be committed.
func (d *drainer) idlePoll() bool {
	switch {
	case d.view.frozen, d.view.unread > 0:
		return true
	case d.w.conn != nil && d.w.waiter.Supported() && d.w.hup == nil:
		return true
	case d.w.peer.scan != nil, d.w.conn != nil && d.w.peer.written > d.w.peer.through:
		return true
	}
	return d.spool.AcksPending()
}

// deadlineTimer arms a timer for delivery's next deadline, if any.
func (d *drainer) deadlineTimer() (<-chan time.Time, func()) {
	at, ok := d.view.wake, d.view.wakes
	if !ok {
		return nil, func() {}
	}
	t := d.opts.Clock.NewTimer(at.Sub(d.opts.Clock.Now()))
	return t.C(), func() { t.Stop() }
}

// onDeadline steps delivery at its deadline, probing the socket first where
// it can: a line read ReplayLinger ago is handled only if the receiver's end
// is still open.
func (d *drainer) onDeadline() {
	if d.w.conn != nil && d.w.waiter.Supported() {
		d.checkIdle()
		return
	}
	if _, err := d.step(msg{kind: msgTick}); err != nil {
		d.fail(err)
	}
}

// onIdleCheck looks for a hang-up while idle and commits pending acks,
// which otherwise ride on appends (an error shows again at the next Read).
func (d *drainer) onIdleCheck() {
	d.checkIdle()
	d.retryPeer()
	_ = d.spool.FlushAcks(idleCheck)
}

// connect dials until it succeeds or the drainer is stopped, each time no
// sooner than delivery says (dialPlan).
func (d *drainer) connect() bool {
	for {
		if !d.waitDial() {
			return false
		}
		d.pub.health.beat()
		d.checkDrops(false) // an outage is when a spool fills up
		dctx, cancel := context.WithTimeout(d.ctx, d.opts.DialTimeout)
		conn, err := d.opts.Dial(dctx, d.opts.Network, d.addr)
		cancel()
		if err == nil {
			d.onConnect(conn)
			d.identifyPeer() // before the first write: see peer.go
			if d.gatedPreamble() != nil {
				d.step(msg{kind: msgDialFailed})
				continue // dropped: back off and dial again (gate.go, preamble.go)
			}
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		err = sockwait.ExplainDial(d.opts.Network, d.addr, err)
		d.record(func(l *linkStats) { l.dialErrors++ }, err)
		d.logs.out.down(err, d.spool.Len, time.Time{})
		d.step(msg{kind: msgDialFailed})
	}
}

func (d *drainer) sleep(dur time.Duration) bool {
	t := d.opts.Clock.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *drainer) onConnect(conn net.Conn) {
	d.w.conn, d.w.waiter, d.w.held.sent = conn, sockwait.New(conn), d.w.held.sent[:0]
	_, d.w.unix = conn.(*net.UnixConn)
	d.w.room = sendRoom{}
	d.w.hup = d.w.waiter.Watch() // ends at disconnect's Close
	if !d.w.waiter.Supported() {
		d.w.hup = nil // nothing to look at: no poll either
	}
	d.resetPeer()
	d.step(msg{kind: msgConnected})
	d.ctl.readTo.Store(0) // wake-ups are cheap; a stale mark is not
	// Close must interrupt a write or wait in progress: a past deadline does.
	d.w.unhook = context.AfterFunc(d.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	d.record(func(l *linkStats) { l.connected = true; l.connects++ }, nil)
}

func (d *drainer) disconnect() {
	if d.w.conn == nil {
		return
	}
	d.w.unhook()
	d.w.conn.Close()
	d.w.conn, d.w.waiter, d.w.hup = nil, nil, nil
	d.record(func(l *linkStats) { l.connected = false }, nil)
}

// fail drops the connection after an error and tells delivery whether the
// receiver hung up (reset: with bytes unread) or the drainer gave up on it.
func (d *drainer) fail(err error) {
	if d.ctx.Err() != nil {
		return
	}
	if !errors.Is(err, errAbandoned) {
		d.record(func(l *linkStats) { l.writeErrors++ }, err)
	}
	m := msg{kind: msgLost}
	var gone *sockwait.PeerGoneError
	switch {
	case errors.As(err, &gone):
		m = msg{kind: msgHungUp, reset: errors.Is(gone.Cause, syscall.ECONNRESET) || gone.Unread > 0}
	case errors.Is(err, sockwait.ErrPeerGone), errors.Is(err, errPeerClosed),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		m = msg{kind: msgHungUp, reset: true}
	}
	_, aerr := d.step(m)
	d.forgetPeer()
	d.disconnect()
	d.logs.out.down(errors.Join(err, aerr), d.spool.Len, time.Time{})
}

func (d *drainer) closeNotes() {
	if d.w.peer.notes != nil {
		d.takeReader(true) // a scan in flight takes milliseconds
		d.retryPeer()      // the connection is still open: run's deferred disconnect comes after
		d.w.peer.notes.Close()
	}
}

// checkIdle notices a receiver that hung up or reads again while idle.
func (d *drainer) checkIdle() {
	if d.w.conn == nil || !d.w.waiter.Supported() {
		return
	}
	if err := d.check(); err != nil {
		d.fail(err)
	}
}

// record updates the shared link stats; a non-nil err becomes the last one.
func (d *drainer) record(f func(*linkStats), err error) {
	d.pub.mu.Lock()
	defer d.pub.mu.Unlock()
	f(&d.pub.link)
	if err != nil {
		d.pub.link.lastErr, d.pub.link.lastErrAt = err.Error(), d.opts.Clock.Now()
	}
}

func (d *drainer) progressCh() chan struct{} {
	d.pub.mu.Lock()
	defer d.pub.mu.Unlock()
	return d.pub.progress
}

func (d *drainer) fillStats(s *Stats) {
	d.pub.mu.Lock()
	defer d.pub.mu.Unlock()
	s.Connected = d.pub.link.connected
	s.Reconnects = max(d.pub.link.connects, 1) - 1
	s.DialErrors = d.pub.link.dialErrors
	s.WriteErrors = d.pub.link.writeErrors
	s.Stalls = d.pub.link.stalls
	s.Delivered = d.pub.link.delivered
	s.DeadLettered = d.pub.link.deadLettered
	s.LastError, s.LastErrorAt = d.pub.link.lastErr, d.pub.link.lastErrAt
	s.OutageStart = d.logs.out.started()
}

// gateState reports whether the gate is open, its generation, the channel
// closed at its next change and how long a hold has left (0: no limit). It
// releases a hold older than MaxHold.
func (d *drainer) gateState() (open bool, gen uint64, changed <-chan struct{}, left time.Duration) {
	g := &d.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held && d.opts.MaxHold > 0 {
		held := d.opts.Clock.Boot() - g.since
		if held < d.opts.MaxHold {
			return false, g.gen, g.watch(), d.opts.MaxHold - held
		}
		g.held = false
		g.signal()
		d.opts.Logger.Warn("delivery held longer than the maximum; released without Release",
			"addr", d.addr, "held_for", held.Round(time.Millisecond).String(), "max_hold", d.opts.MaxHold.String())
	}
	return !g.held, g.gen, g.watch(), 0
}

// holdTimer returns a channel that fires after left (nil if left <= 0).
func (d *drainer) holdTimer(left time.Duration) (<-chan time.Time, func()) {
	if left <= 0 {
		return nil, func() {}
	}
	t := d.opts.Clock.NewTimer(left)
	return t.C(), func() { t.Stop() }
}

// waitGate waits until the gate is open, watching the connection as when
// idle. It returns false if the drainer is stopped or the connection lost.
func (d *drainer) waitGate() bool {
	open, _, changed, left := d.gateState()
	if open {
		return true
	}
	check := d.opts.Clock.NewTimer(idleCheck)
	defer check.Stop()
	for !open {
		check.Reset(idleCheck)
		limit, stopLimit := d.holdTimer(left)
		expiry, stopExpiry := d.deadlineTimer()
		select {
		case <-changed:
		case <-limit:
		case <-expiry:
			d.onDeadline()
		case <-check.C():
			d.onIdleCheck()
		case <-d.ctx.Done():
		}
		stopLimit()
		stopExpiry()
		if d.ctx.Err() != nil || d.w.conn == nil {
			return false
		}
		open, _, changed, left = d.gateState()
	}
	return true
}

// gatedPreamble writes a new connection's preamble once the gate is open.
func (d *drainer) gatedPreamble() error {
	if !d.waitGate() {
		if d.ctx.Err() != nil {
			return d.ctx.Err()
		}
		return errGateLost
	}
	_, d.w.preGen, _, _ = d.gateState()
	return d.preamble()
}

// passGate waits while the gate is shut and, with PreambleOnRelease, writes
// the preamble again on a connection held since its last one. It returns
// false when the drainer is stopped or the connection was lost.
func (d *drainer) passGate() bool {
	if !d.waitGate() {
		return false
	}
	if !d.opts.PreambleOnRelease {
		return true
	}
	if _, gen, _, _ := d.gateState(); gen != d.w.preGen {
		d.w.preGen = gen
		return d.preamble() == nil
	}
	return true
}

// enterGate waits while the gate is shut and marks a write under way, for
// Hold to wait on; leaveGate ends it. waited means an earlier deadline is stale.
func (d *drainer) enterGate() (waited bool, err error) {
	for {
		open, _, changed, left := d.gateState()
		if open && d.pub.gate.startWrite() {
			return waited, nil
		}
		if open {
			continue // held again since the look: look again
		}
		waited = true
		limit, stop := d.holdTimer(left)
		select {
		case <-changed:
		case <-limit:
		case <-d.ctx.Done():
		}
		stop()
		if err := d.ctx.Err(); err != nil {
			return waited, err
		}
	}
}

func (d *drainer) leaveGate() {
	g := &d.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writing = false
	g.signal()
}

// apply carries out what delivery decided. It returns errAbandoned when
// delivery dropped the connection, or the spool's error.
func (d *drainer) apply(r ready) error {
	var err error
	if r.ackThrough != 0 {
		err = d.ack(r.ackThrough)
	}
	if r.setAside != 0 {
		d.deadLetter(r.setAside)
	}
	if r.saveStrike {
		d.saveStrikes()
	}
	for _, n := range r.notes {
		d.logNote(n)
	}
	if r.abandon {
		return errAbandoned
	}
	return err
}

// ack removes the events through seq from the spool; the newest is kept as
// the witness.
func (d *drainer) ack(seq uint64) error {
	if err := d.spool.Ack(seq); err != nil {
		return err // they are resent: duplicates
	}
	n := 0
	for n < len(d.w.held.sent) && d.w.held.sent[n].Seq <= seq {
		n++
	}
	if n > 0 {
		d.w.held.witness = d.w.held.sent[n-1]
		d.w.held.sent = append(d.w.held.sent[:0], d.w.held.sent[n:]...)
	}
	d.pub.mu.Lock()
	d.pub.link.delivered += uint64(n)
	d.signalProgress()
	d.pub.mu.Unlock()
	return nil
}

// signalProgress wakes Flush; d.pub.mu must be held.
func (d *drainer) signalProgress() {
	close(d.pub.progress)
	d.pub.progress = make(chan struct{})
}

// deadLetter appends the oldest pending event seq to the dead-letter file,
// then removes it from the spool: a crash in between duplicates, never loses.
func (d *drainer) deadLetter(seq uint64) {
	entries, err := d.spool.Read(seq, 1, 0)
	if err != nil || len(entries) == 0 || entries[0].Seq != seq {
		d.opts.Logger.Error("cannot read a poison event to set it aside", "seq", seq, "error", err)
		return
	}
	e := entries[0]
	attempts := d.view.strikes.n
	dl := ledger.DeadLetter{Seq: seq, Appended: e.Time, At: d.opts.Clock.Now(), Attempts: attempts, Data: e.Data}
	path := filepath.Join(d.spool.Dir(), ledger.DeadLetterFile)
	if err := ledger.AppendDeadLetter(d.spool.Dir(), dl, d.opts.MaxDeadLetterBytes); err != nil {
		d.logs.warns.deadLetter.warn(d.opts.Logger, "cannot set a poison event aside; it stays spooled and is retried",
			"seq", seq, "file", path, "error", err.Error())
		return
	}
	if err := d.spool.Ack(seq); err != nil {
		d.opts.Logger.Error("poison event set aside but not removed from the spool; it will be set aside again",
			"seq", seq, "error", err)
		return
	}
	d.step(msg{kind: msgSetAside, seq: seq})
	d.opts.Logger.Error("event set aside in the dead-letter file: the receiver failed on it repeatedly",
		"seq", seq, "attempts", attempts, "bytes", len(e.Data), "first_bytes", fmt.Sprintf("%.80q", e.Data),
		"file", path, "hint", "list with 'evspool inspect --spool DIR --dead-letters'; re-inject with '--dead-letters --raw | evspool run ...'")
	d.pub.mu.Lock()
	d.pub.link.deadLettered++
	d.signalProgress()
	d.pub.mu.Unlock()
}

// saveStrikes keeps delivery's strike record, and the witness, in the spool.
func (d *drainer) saveStrikes() {
	s := d.view.strikes
	rec := ledger.Strikes{Seq: s.seq, Count: s.n}
	if s.seq != 0 && s.witness != 0 && d.w.held.witness.Seq == s.witness {
		rec.WitnessSeq, rec.Witness = s.witness, d.w.held.witness.Data
	}
	if err := ledger.SaveStrikes(d.spool, rec); err != nil {
		d.logs.warns.deadLetter.warn(d.opts.Logger, "cannot save a suspect event's strikes; a restart counts them again",
			"seq", s.seq, "error", err.Error())
	}
}

// restoreStrikes takes the strike record an earlier process saved.
func (d *drainer) restoreStrikes() {
	rec, err := ledger.LoadStrikes(d.spool)
	if err != nil {
		d.opts.Logger.Warn("cannot read the suspect event's strikes; counting them again", "error", err.Error())
	}
	d.step(msg{kind: msgRestore, seq: d.spool.FirstSeq(), strikes: strikeRecord{seq: rec.Seq, n: rec.Count, witness: rec.WitnessSeq}})
	if rec.WitnessSeq != 0 {
		d.w.held.witness = wal.Entry{Seq: rec.WitnessSeq, Data: rec.Witness}
	}
}

// logNote logs what delivery noted, rate-limited.
func (d *drainer) logNote(n note) {
	now := d.opts.Clock.Now()
	switch n.kind {
	case noteSlow:
		d.record(func(l *linkStats) { l.stalls++ }, nil)
		d.logs.warns.delivery.warn(d.opts.Logger, "receiver is not reading; keeping the connection", "addr", d.addr,
			"stalled_for", now.Sub(n.since).Round(time.Millisecond).String())
	case noteFrozen:
		d.logs.out.down(fmt.Errorf("%w: read nothing for %v; keeping its connection and writing nothing new until it reads",
			errFrozen, now.Sub(n.since).Round(time.Second)), d.spool.Len, n.since)
	case noteStuck:
		d.opts.Logger.Warn("receiver stopped reading inside an event (a line too long for it?); abandoning the connection",
			"addr", d.addr, "seq", n.seq, "stalled_for", now.Sub(n.since).Round(time.Millisecond).String())
	case noteCrashLoop:
		d.logs.warns.delivery.warn(d.opts.Logger, fmt.Sprintf("receiver crash-looping: failed %d times in a row before handling an event; backing off", n.n),
			"addr", d.addr, "pending_events", d.spool.Len())
	case noteStrike:
		d.opts.Logger.Warn("receiver failed on an event; isolating it", "seq", n.seq, "strikes", n.n,
			"max_attempts", d.opts.MaxAttempts)
	}
}

// checkUnreadable logs events a salvage set off by a commit found
// unreadable; the drainer's own salvages log theirs.
func (d *drainer) checkUnreadable() {
	total, _ := ledger.Reported(d.spool)
	if total.Unreadable <= d.logs.drops.unreadable {
		return
	}
	n := total.Unreadable - d.logs.drops.unreadable
	attrs := []any{"unreadable_events", n, "unreadable_total", total.Unreadable}
	if r := d.spool.Salvaged(); r != nil {
		attrs = append(attrs, "corrupt_file", r.CorruptPath, "cause", r.Cause)
	}
	d.opts.Logger.Warn("spool was damaged and has been salvaged: events lost", attrs...)
	d.unreadableLogged()
}

// unreadableLogged records that the spool's unreadable events were logged.
func (d *drainer) unreadableLogged() {
	total, _ := ledger.Reported(d.spool)
	d.logs.drops.unreadable = total.Unreadable
	markReported(d.spool, d.opts.Logger, ledger.Losses{Unreadable: total.Unreadable})
}

// check logs new drops if the interval has passed, or anyway when final.
func (d *drainer) checkDrops(final bool) {
	now := d.opts.Clock.Now()
	if !final && now.Sub(d.logs.drops.lastCheck) < dropCheckEvery {
		return
	}
	d.logs.drops.lastCheck = now
	d.checkUnreadable()
	st := d.spool.Stats()
	total := st.DroppedOldest.Events
	n := total - min(d.logs.drops.seen, total)
	d.logs.drops.seen = max(d.logs.drops.seen, total)
	if !d.logs.drops.rep.lost(n, final) {
		return
	}
	dropped, _ := d.logs.drops.rep.take()
	d.opts.Logger.Warn("spool full: oldest events dropped to make room",
		"dropped_events", dropped, "dropped_total", total, "pending_events", st.PendingEvents,
		"max_spool_bytes", st.MaxBytes, "hint", "raise the spool's size cap (--max-spool-size) or check the receiver")
	markReported(d.spool, d.opts.Logger, ledger.Losses{DroppedOldest: total})
}

// waitDial waits until delivery's next dial (view.dialAt). Where the wait may
// end early (the receiver was down) and the receiver is on a Unix socket, it
// watches the socket's directory (pathwatch) and ends when the path
// appears. It returns false when the drainer is stopped.
func (d *drainer) waitDial() bool {
	dur := d.view.dialAt.Sub(d.opts.Clock.Now())
	if dur <= 0 {
		return d.ctx.Err() == nil
	}
	if !d.view.early || d.opts.Network != "unix" {
		return d.sleep(dur)
	}
	if d.w.watch == nil {
		w, err := pathwatch.New(d.addr)
		if err != nil {
			return d.sleep(dur) // no directory yet, or no inotify
		}
		d.w.watch = w
		// It may have appeared between the failed dial and the watch.
		if pathExists(d.addr) {
			d.step(msg{kind: msgAppeared})
			return d.ctx.Err() == nil
		}
	}
	ctx, cancel := d.timeout(dur)
	appeared, err := d.w.watch.Wait(ctx)
	cancel()
	if err != nil {
		d.closeWatch() // the directory went: watch it anew next time
	} else if appeared {
		d.step(msg{kind: msgAppeared})
	}
	return d.ctx.Err() == nil
}

// timeout is context.WithTimeout on the drainer's clock.
func (d *drainer) timeout(dur time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(d.ctx)
	t := d.opts.Clock.NewTimer(dur)
	go func() {
		defer cancel()
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (d *drainer) closeWatch() {
	if d.w.watch != nil {
		d.w.watch.Close()
		d.w.watch = nil
	}
}

func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// errFrozen is a receiver that reads nothing, connected.
var errFrozen = errors.New("receiver frozen")

// dropCheckEvery is how often the drainer looks for new drop-oldest drops.
const dropCheckEvery = time.Second

// dropLog logs, rate-limited, the events drop-oldest removed: new ones only,
// as the spool's counters survive restarts.
type dropLog struct {
	seen       uint64 // DroppedOldest.Events when last looked at
	rep        reporter
	unreadable uint64 // the spool's unreadable events when last logged (losses.go)
	lastCheck  time.Time
}

// expiredLog logs the events Options.MaxAge removed unsent, rate-limited;
// here is this process's count, for Stats.Expired.
type expiredLog struct {
	here atomic.Uint64
	rep  reporter
}
