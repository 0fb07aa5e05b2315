package emitter

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/pathwatch"
	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// The drainer's loop: it dials, passes the gate, sends what delivery asks
// for and idles until something happens; while it idles, Emit callers may
// send in its place (sendInline, inline.go). Its primitives are in shell.go.

func newDrainer(addr string, opts *Options, spool *wal.WAL, loss *ledger.Book) *drainer {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{}),
		pub: shared{health: health{clk: opts.Clock, base: opts.Clock.Now()}},
		out: &outage{addr: addr, rep: newReporter(opts), log: opts.Logger}}
	l.lis = newListener(opts, l.notify)
	d := &drainer{
		addr: addr, opts: opts, spool: spool, ctx: ctx, loss: loss, link: l,
		dv: delivery.New(deliveryConfigOf(opts)),
		logs: logs{delivery: newReporter(opts), deadLetter: newReporter(opts), preamble: newReporter(opts),
			out: l.out},
	}
	l.handoff = d.notifyFor
	d.restoreStrikes()
	return d
}

func (d *drainer) run() {
	defer close(d.done)
	d.ctl.run.Lock()
	defer d.ctl.run.Unlock()
	defer d.disconnect()
	defer d.closeWatch()
	for d.ctx.Err() == nil {
		d.pub.health.beat()
		d.checkLosses()
		if d.w.conn == nil && d.w.released && !d.awaitWork() {
			return
		}
		if d.w.conn == nil && !d.connect() {
			return
		}
		if d.passGate(false) != nil {
			continue // stopped, or the connection was lost while held (gate.go)
		}
		if err := d.answerRequest(); err != nil {
			d.fail(err)
			continue
		}
		if d.rd.Reading && d.w.waiter.Supported() && !d.opts.AckOnWrite {
			if err := d.waitRead(false); err != nil { // a write sent inline
				d.fail(err)
				continue
			}
		}
		n, err := d.sendBatch()
		if err != nil {
			if d.w.conn != nil { // else a preamble due at a write dropped it (passGate)
				d.fail(err)
			}
			continue
		}
		if n > 0 {
			continue
		}
		if !d.rd.Frozen {
			d.logs.out.up(d.spool.Len) // connected, nothing to send: the outage is over
		}
		d.idle(nil, nil)
	}
}

// idle waits for new events, delivery's next deadline, the socket becoming
// readable or, if delivery plans one (Park), the next look; while held also
// for the gate to change or the hold's limit. Alive counts it as not wedged.
func (d *drainer) idle(gate <-chan struct{}, holdLimit <-chan time.Time) {
	d.step(delivery.Input{Kind: delivery.Park, Idle: d.idleFacts(gate != nil)})
	look := d.rd.Look
	var expiry, poll, release <-chan time.Time
	if gate == nil && d.releasable() {
		t := d.opts.Clock.NewTimer(d.opts.ReleaseIdle - d.opts.Clock.Now().Sub(d.w.wroteAt))
		defer t.Stop()
		release = t.C()
	}
	if d.rd.Wakes {
		t := d.opts.Clock.NewTimer(d.rd.Wake.Sub(d.opts.Clock.Now()))
		defer t.Stop()
		expiry = t.C()
	}
	if look > 0 {
		if d.w.poll == nil {
			d.w.poll = d.opts.Clock.NewTimer(look)
		} else {
			d.w.poll.Reset(look)
		}
		defer d.w.poll.Stop()
		poll = d.w.poll.C()
	}
	d.pub.health.idle(true)
	defer d.pub.health.idle(false)
	d.ctl.parked = gate == nil
	// Parked: an Emit caller may send meanwhile (sendInline), so what the
	// wake-up finds is acted on once the lock is back.
	hup := d.w.hup
	d.ctl.run.Unlock()
	var woke idleWake
	select {
	case <-d.wake:
	case <-gate:
	case <-holdLimit:
	case <-expiry:
		woke = wokeDeadline
	case <-poll:
		woke = wokeLook
	case <-hup:
		woke = wokeHup
	case <-release:
		woke = wokeRelease
	case <-d.ctx.Done():
	}
	d.ctl.run.Lock()
	d.ctl.parked = false
	switch {
	case woke == wokeDeadline:
		d.onDeadline()
	case woke == wokeLook:
		// A hang-up while idle; acks that otherwise ride on appends (an
		// error shows again at the next Read).
		d.checkIdle()
		_ = d.spool.FlushAcks(look)
	case woke == wokeHup && hup == d.w.hup: // the connection it watched is still the drainer's
		d.w.hup = nil
		d.checkIdle()
	case woke == wokeRelease && d.releasable() && d.opts.Clock.Now().Sub(d.w.wroteAt) >= d.opts.ReleaseIdle:
		d.release()
	}
}

// idleWake is what ended an idle wait that the drainer acts on itself.
type idleWake int

const (
	wokeOther    idleWake = iota // new events, the gate, ctx: the loop sees to them
	wokeDeadline                 // delivery's deadline
	wokeLook                     // the idle's next look
	wokeHup                      // the receiver closed its end, or reading it failed
	wokeRelease                  // the connection has been idle ReleaseIdle
)

// onDeadline steps delivery at its deadline, probing the socket first where
// it can: a line read ReplayLinger ago is handled only if the receiver's end
// is still open.
func (d *drainer) onDeadline() {
	if d.w.conn != nil && d.w.waiter.Supported() {
		d.checkIdle()
		return
	}
	if err := d.step(delivery.Input{Kind: delivery.Tick}); err != nil {
		d.fail(err)
	}
}

// connect dials until it succeeds or the drainer is stopped, each time no
// sooner than delivery says (Ready.DialAt).
func (d *drainer) connect() bool {
	for {
		if !d.waitDial() {
			return false
		}
		d.pub.health.beat()
		d.checkLosses() // an outage is when a spool fills up
		dctx, cancel := context.WithTimeout(d.ctx, d.opts.DialTimeout)
		conn, err := d.opts.Dial(dctx, d.opts.Network, d.addr)
		cancel()
		if err == nil {
			d.onConnect(conn)
			if d.passGate(true) != nil {
				d.step(delivery.Input{Kind: delivery.DialFailed})
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
		d.step(delivery.Input{Kind: delivery.DialFailed})
	}
}

func (d *drainer) onConnect(conn net.Conn) {
	d.w.conn, d.w.waiter, d.w.sent = conn, sockwait.New(conn), d.w.sent[:0]
	_, d.w.unix = conn.(*net.UnixConn)
	d.w.room = sendRoom{}
	d.lis.requested.Store(false) // asked on a connection that is gone
	d.w.in = d.lis.read(conn)    // ends at disconnect's Close
	d.w.hup = d.w.in.done
	if !d.w.waiter.Supported() {
		d.w.hup = nil // nothing to look at: no poll either
	}
	d.w.wroteTo, d.w.wroteAt, d.w.stateAt, d.w.stateBefore, d.w.gapTo = 0, d.opts.Clock.Now(), 0, 0, 0
	d.step(delivery.Input{Kind: delivery.Connected, Reads: d.w.unix && d.w.waiter.Supported()})
	d.ctl.readTo.Store(0) // wake-ups are cheap; a stale mark is not
	// Close must interrupt a write or wait in progress: a past deadline does.
	d.w.unhook = context.AfterFunc(d.ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	resumed := d.w.resumed // a dial after a release is no reconnect
	d.w.resumed = false
	d.record(func(l *linkStats) {
		l.connected = true
		if !resumed {
			l.connects++
		}
	}, nil)
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

// waitGate waits until the gate is open, watching the connection as when
// idle. It returns false if the drainer is stopped or the connection lost.
func (d *drainer) waitGate() bool {
	for {
		open, _, changed, limit, stop := d.gateState()
		if open {
			return true
		}
		d.idle(changed, limit)
		stop()
		if d.ctx.Err() != nil || d.w.conn == nil {
			return false
		}
	}
}

// passGate waits while the gate is shut and writes the preamble on a new
// connection (fresh) or, with PreambleOnRelease, again on a connection held
// since its last one. It fails when the drainer is stopped or the
// connection was lost.
func (d *drainer) passGate(fresh bool) error {
	if !d.waitGate() {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		return errGateLost
	}
	if !fresh && !d.opts.PreambleOnRelease {
		return nil
	}
	_, gen, _, _, stop := d.gateState()
	stop()
	if !fresh && gen == d.w.preGen {
		return nil
	}
	d.w.preGen = gen
	if err := d.preamble(); err != nil || !fresh || d.opts.StateKey == nil {
		return err
	}
	if err := d.awaitRequest(); err != nil {
		return err
	}
	if err := d.writeState(); err != nil {
		d.opts.Logger.Warn("cannot write the state on a new connection; reconnecting", "addr", d.addr, "error", err.Error())
		d.disconnect()
		return err
	}
	return nil
}

// waitDial waits until delivery's next dial (Ready.DialAt). On a Unix socket
// it watches the socket's directory (pathwatch) meanwhile and tells
// delivery when the path appears, which may end the wait. It returns false
// when the drainer is stopped.
func (d *drainer) waitDial() bool {
	for d.ctx.Err() == nil {
		if d.opts.Clock.Now().Before(d.rd.DialAt) && d.opts.Network == "unix" {
			d.watchPath() // may end the wait
		}
		dur := d.rd.DialAt.Sub(d.opts.Clock.Now())
		if dur <= 0 {
			return true
		}
		if d.w.watch == nil {
			d.sleep(dur) // not a Unix socket, no directory yet, or no inotify
			continue
		}
		ctx, cancel := d.timeout(dur)
		appeared, err := d.w.watch.Wait(ctx)
		cancel()
		if err != nil {
			d.closeWatch() // the directory went: watch it anew next time
		} else if appeared {
			d.step(delivery.Input{Kind: delivery.Appeared})
		}
	}
	return false
}

// watchPath watches the socket's directory if it does not yet. A path there
// when the watch begins may have appeared since the last dial: delivery is
// told.
func (d *drainer) watchPath() {
	if d.w.watch != nil {
		return
	}
	w, err := pathwatch.New(d.addr)
	if err != nil {
		return
	}
	d.w.watch = w
	if _, err := os.Lstat(d.addr); err == nil {
		d.step(delivery.Input{Kind: delivery.Appeared})
	}
}

func (d *drainer) closeWatch() {
	if d.w.watch != nil {
		d.w.watch.Close()
		d.w.watch = nil
	}
}

// preamble runs Options.Preamble on the connection just made. On failure it
// drops the connection and returns the error.
func (d *drainer) preamble() error {
	if d.opts.Preamble == nil {
		return nil
	}
	d.pub.pre.running.Store(true)
	w := &preambleWriter{d: d}
	err := func() (err error) {
		defer func() { // a bug in the hook fails connections, not the process
			if r := recover(); r != nil {
				err = fmt.Errorf("preamble panicked: %v", r)
			}
		}()
		return d.opts.Preamble(d.ctx, w)
	}()
	w.done.Store(true)
	d.pub.pre.running.Store(false)
	d.w.room.ok = false // its writes took no reading after them: the next chunk takes one
	d.pub.health.beat()
	if err == nil {
		return nil
	}
	d.disconnect()
	if d.ctx.Err() != nil {
		return d.ctx.Err() // closing: not a failure to report
	}
	err = fmt.Errorf("%w on %s: %w", ErrPreamble, d.addr, err)
	d.pub.pre.errors.Add(1)
	d.record(func(*linkStats) {}, err)
	d.logs.preamble.warn(d.opts.Logger, "connection preamble failed; reconnecting",
		"addr", d.addr, "error", err.Error(), "pending_events", d.spool.Len())
	return err
}
