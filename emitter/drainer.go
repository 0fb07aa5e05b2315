package emitter

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// idleCheck is how often an idle connection is checked for a receiver that
// went away, so an outage is noticed (and logged) when it starts rather than
// at the next event.
const idleCheck = 100 * time.Millisecond

// drainer is the one goroutine that owns the connection: it reads batches
// from the spool, writes them, waits until the receiver has read them,
// acknowledges them, and on any error reconnects and resends from the oldest
// unacknowledged entry. Others talk to it through wake (a notify channel of
// capacity 1) and stop.
type drainer struct {
	addr  string
	opts  *Options
	spool *wal.WAL

	wake chan struct{}
	// readTo is the newest sequence number a Read has returned on this
	// connection: an Emit at or below it needs no wake-up (see notifyFor).
	readTo atomic.Uint64
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the run goroutine.
	conn      net.Conn
	waiter    *sockwait.Waiter
	unhook    func() bool
	cursor    uint64 // next sequence to send; 0 means from the oldest pending
	buf       []byte
	bo        *backoff.ExponentialBackOff
	delivered bool // something was delivered on this connection
	stalling  bool // the receiver read nothing for WriteTimeout; counted once
	batch     int  // events per write: BatchEvents, less after a stall
	stallWarn limiter
	dlWarn    limiter
	drops     dropLog
	out       outage
	resume    resume // cuts the backoff short on a Unix socket
	win       window
	poison    poison

	aged   expiredLog    // see expire.go
	pre    preambleState // see preamble.go
	health health        // see health.go

	mu       sync.Mutex
	progress chan struct{} // closed and replaced after each ack
	link     linkStats
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
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = opts.MinBackoff
	bo.MaxInterval = opts.MaxBackoff
	bo.RandomizationFactor = 0.5
	bo.Multiplier = 2
	bo.MaxElapsedTime = 0 // never give up
	bo.Reset()
	return &drainer{
		addr: addr, opts: opts, spool: spool,
		wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		bo: bo, progress: make(chan struct{}), batch: opts.BatchEvents,
		drops:     dropLog{logged: dropped},
		out:       outage{addr: addr, interval: opts.WarnInterval, log: opts.Logger},
		stallWarn: limiter{interval: opts.WarnInterval},
		dlWarn:    limiter{interval: opts.WarnInterval},
	}
}

// notifyFor wakes the drainer for events committed through last, unless
// it has read them already. The callers of one group commit return one by
// one: the first wakes the drainer, which reads the whole commit, and the
// others find it read. Waking it for each of them cost an empty Read and
// two goroutine switches per caller, on the CPU the next commit's callers
// need (issue 20). The drainer never idles with read events unsent: it
// idles only after a Read found nothing, and a failure resends from the
// oldest pending event without waiting to be woken.
func (d *drainer) notifyFor(last uint64) {
	if last > d.readTo.Load() {
		d.notify()
	}
}

// noteRead records the newest sequence number a Read returned.
func (d *drainer) noteRead(entries []wal.Entry) {
	if len(entries) > 0 {
		d.readTo.Store(max(d.readTo.Load(), entries[len(entries)-1].Seq))
	}
}

// notify wakes the drainer without blocking.
func (d *drainer) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *drainer) stop() { d.cancel() }

func (d *drainer) run() {
	defer close(d.done)
	defer d.disconnect()
	defer d.resume.close()
	idle := time.NewTicker(idleCheck)
	defer idle.Stop()
	for d.ctx.Err() == nil {
		d.health.beat()
		d.checkDrops(false)
		if d.conn == nil && !d.connect() {
			return
		}
		n, err := d.sendBatch()
		if err != nil {
			d.fail(err)
			continue
		}
		if n > 0 {
			continue
		}
		d.out.up(d.spool.Len) // connected, nothing to send: the outage is over
		d.idle(idle.C)
	}
}

// idle waits for new events, for the replay window's next expiry, or for the
// idle check, whichever comes first.
func (d *drainer) idle(check <-chan time.Time) {
	var expiry <-chan time.Time
	if at, ok := d.win.next(d.opts.ReplayLinger); ok {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		expiry = t.C
	}
	select {
	case <-d.wake:
	case <-expiry:
		if err := d.expire(); err != nil {
			d.fail(err)
		}
	case <-check:
		d.checkIdle()
		// Acks ride on appends; with none for a while, commit their
		// deletions (an error shows again at the next Read).
		_ = d.spool.FlushAcks(idleCheck)
	case <-d.ctx.Done():
	}
}

// connect dials until it succeeds or the drainer is stopped. After a
// connection that delivered nothing it backs off before the first attempt,
// so a receiver that accepts and hangs up at once is not hammered.
func (d *drainer) connect() bool {
	wait := !d.delivered && d.link.connects > 0
	for {
		if wait && !d.backoffWait() {
			return false
		}
		wait = true
		d.health.beat()
		d.checkDrops(false) // an outage is when a spool fills up
		dctx, cancel := context.WithTimeout(d.ctx, d.opts.DialTimeout)
		conn, err := d.opts.Dial(dctx, d.opts.Network, d.addr)
		cancel()
		if err == nil {
			d.onConnect(conn)
			if d.preamble() != nil {
				continue // dropped: back off and dial again (preamble.go)
			}
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		d.record(func(l *linkStats) { l.dialErrors++ }, err)
		d.out.down(err, d.spool.Len, time.Time{})
	}
}

func (d *drainer) sleep(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *drainer) onConnect(conn net.Conn) {
	d.conn, d.waiter, d.cursor, d.delivered = conn, sockwait.New(conn), 0, false
	d.readTo.Store(0) // wake-ups are cheap; a stale mark is not
	d.win.reset()     // what it held is still spooled: resent from the oldest
	d.poison.written, d.poison.inflight, d.poison.isolated = 0, 0, false
	// Close must interrupt a write or wait in progress: a past deadline does.
	d.unhook = context.AfterFunc(d.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	d.record(func(l *linkStats) { l.connected = true; l.connects++ }, nil)
}

func (d *drainer) disconnect() {
	if d.conn == nil {
		return
	}
	d.unhook()
	d.conn.Close()
	d.conn, d.waiter = nil, nil
	d.record(func(l *linkStats) { l.connected = false }, nil)
}

// fail drops the connection after an error; the next batch is read again
// from the oldest unacknowledged entry, the replay window included. The
// outage began when the receiver last read something if it stalled.
func (d *drainer) fail(err error) {
	if d.ctx.Err() != nil {
		return
	}
	d.record(func(l *linkStats) { l.writeErrors++ }, err)
	var since time.Time
	se := (*stallError)(nil)
	stalled := errors.As(err, &se)
	if stalled {
		since = se.since
	}
	d.blame(stalled)
	d.disconnect()
	d.out.down(err, d.spool.Len, since)
}

// checkIdle notices a receiver that went away while nothing was being sent.
func (d *drainer) checkIdle() {
	if d.conn == nil || !d.waiter.Supported() {
		return
	}
	if gone, err := d.waiter.HungUp(); gone || err != nil {
		d.fail(errors.Join(sockwait.ErrPeerGone, err))
	}
}

// record updates the shared link stats; err, when not nil, becomes the last
// error.
func (d *drainer) record(f func(*linkStats), err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.link)
	if err != nil {
		d.link.lastErr, d.link.lastErrAt = err.Error(), time.Now()
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
