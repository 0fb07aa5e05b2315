package emitter

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	opts  *Options
	spool *wal.WAL

	wake   chan struct{}
	readTo atomic.Uint64 // newest sequence read on this connection (notifyFor)
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the run goroutine. Every decision is dv's; the rest is I/O.
	clk   Clock     // Options.Clock: every wait and every now
	dv    *delivery // stepped through step, never read
	view  view      // delivery's state as of its last step
	w     wire
	held  held
	peer  peerNote         // see peer.go
	watch *pathwatch.Watch // the socket's directory, while waiting to dial (resume.go)
	warns warns
	drops dropLog
	out   outage

	aged   expiredLog     // see expire.go
	pre    preambleState  // see preamble.go
	health health         // see health.go
	gate   gate           // see gate.go
	preGen uint64         // the gate's generation at this connection's last preamble
	scans  sync.WaitGroup // reader scans in flight (peer.go), waited for at stop

	mu       sync.Mutex
	progress chan struct{} // closed and replaced after each ack
	link     linkStats
}

// wire is the connection and what reads it.
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
		clk: opts.Clock, health: health{clk: opts.Clock},
		addr: addr, opts: opts, spool: spool,
		wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		dv: newDelivery(deliveryConfigOf(opts)), progress: make(chan struct{}),
		drops: dropLog{seen: dropped, rep: newReporter(opts)},
		aged:  expiredLog{rep: newReporter(opts)},
		out:   outage{addr: addr, rep: newReporter(opts), log: opts.Logger},
		warns: warns{delivery: newReporter(opts), deadLetter: newReporter(opts), preamble: newReporter(opts)},
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
	if last > d.readTo.Load() {
		d.notify()
	}
}

func (d *drainer) noteRead(entries []wal.Entry) {
	if len(entries) > 0 {
		d.readTo.Store(max(d.readTo.Load(), entries[len(entries)-1].Seq))
	}
}

func (d *drainer) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *drainer) stop() { d.cancel() }

// step tells delivery m at the clock's now and carries out its ready.
func (d *drainer) step(m msg) (ready, error) {
	m.now = d.clk.Now()
	r := d.dv.step(m)
	d.view = r.view
	return r, d.apply(r)
}

func (d *drainer) run() {
	defer close(d.done)
	defer d.scans.Wait()
	defer d.disconnect()
	defer d.closeWatch()
	defer d.closeNotes()
	d.adoptPeerMark()
	for d.ctx.Err() == nil {
		d.health.beat()
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
			d.out.up(d.spool.Len) // connected, nothing to send: the outage is over
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
			d.w.poll = d.clk.NewTimer(idleCheck)
		} else {
			d.w.poll.Reset(idleCheck)
		}
		defer d.w.poll.Stop()
		poll = d.w.poll.C()
	}
	d.health.idle(true)
	defer d.health.idle(false)
	select {
	case <-d.wake:
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
	case d.peer.scan != nil, d.w.conn != nil && d.peer.written > d.peer.through:
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
	t := d.clk.NewTimer(at.Sub(d.clk.Now()))
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
// sooner than delivery says (delivery_dial.go).
func (d *drainer) connect() bool {
	for {
		if !d.waitDial() {
			return false
		}
		d.health.beat()
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
		d.out.down(err, d.spool.Len, time.Time{})
		d.step(msg{kind: msgDialFailed})
	}
}

func (d *drainer) sleep(dur time.Duration) bool {
	t := d.clk.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *drainer) onConnect(conn net.Conn) {
	d.w.conn, d.w.waiter, d.held.sent = conn, sockwait.New(conn), d.held.sent[:0]
	_, d.w.unix = conn.(*net.UnixConn)
	d.w.room = sendRoom{}
	d.w.hup = d.w.waiter.Watch() // ends at disconnect's Close
	if !d.w.waiter.Supported() {
		d.w.hup = nil // nothing to look at: no poll either
	}
	d.resetPeer()
	d.step(msg{kind: msgConnected})
	d.readTo.Store(0) // wake-ups are cheap; a stale mark is not
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
	d.out.down(errors.Join(err, aerr), d.spool.Len, time.Time{})
}

func (d *drainer) closeNotes() {
	if d.peer.notes != nil {
		d.takeReader(true) // a scan in flight takes milliseconds
		d.retryPeer()      // the connection is still open: run's deferred disconnect comes after
		d.peer.notes.Close()
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
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.link)
	if err != nil {
		d.link.lastErr, d.link.lastErrAt = err.Error(), d.clk.Now()
	}
}

func (d *drainer) progressCh() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.progress
}

func (d *drainer) fillStats(s *Stats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.Connected = d.link.connected
	s.Reconnects = max(d.link.connects, 1) - 1
	s.DialErrors = d.link.dialErrors
	s.WriteErrors = d.link.writeErrors
	s.Stalls = d.link.stalls
	s.Delivered = d.link.delivered
	s.DeadLettered = d.link.deadLettered
	s.LastError, s.LastErrorAt = d.link.lastErr, d.link.lastErrAt
	s.OutageStart = d.out.started()
}
