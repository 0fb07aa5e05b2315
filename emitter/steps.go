package emitter

import (
	"errors"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/sockwait"
)

// The shell's side of delivery: every decision is delivery's; the drainer
// tells it what happened (step) and carries out what it says (carry).

// step tells delivery in, at the clock's now, and carries out its Ready.
func (d *drainer) step(in delivery.Input) error {
	in.Now = d.opts.Clock.Now()
	if err := d.dv.Step(in); err != nil {
		return err
	}
	return d.carry()
}

// carry carries out delivery's Ready: it logs (a Flush that returns after
// an acknowledgement has its log), acknowledges, sets aside and saves the
// strikes, in that order, then advances; an event set aside is delivery's
// input of the next round. It returns errAbandoned or errPeerClosed when
// delivery drops the connection, or the spool's error.
func (d *drainer) carry() error {
	var err error
	for {
		rd := d.dv.Ready()
		d.rd = rd
		for _, n := range rd.Notes {
			d.logNote(n)
		}
		if rd.AckThrough != 0 {
			err = d.ack(rd.AckThrough, rd.Proven)
		}
		aside := rd.SetAside != 0 && d.deadLetter(rd.SetAside)
		if rd.SaveStrikes {
			d.saveStrikes()
		}
		switch rd.Drop {
		case delivery.DropStuck:
			err = errAbandoned
		case delivery.DropFin:
			err = errPeerClosed
		}
		d.dv.Advance()
		if !aside {
			return err
		}
		if serr := d.dv.Step(delivery.Input{Kind: delivery.SetAside, Now: d.opts.Clock.Now(), Seq: rd.SetAside}); serr != nil {
			return serr
		}
	}
}

// fail drops the connection after an error and tells delivery what it
// shows of the receiver; delivery judges whether it hung up.
func (d *drainer) fail(err error) {
	if d.ctx.Err() != nil {
		return
	}
	if !errors.Is(err, errAbandoned) {
		d.record(func(l *linkStats) { l.writeErrors++ }, err)
	}
	if d.w.in.resetSeen(0) && !errors.Is(err, syscall.ECONNRESET) {
		err = errors.Join(err, syscall.ECONNRESET) // the reader's read took it from the socket
	}
	cause, unread := causeOf(err)
	aerr := d.step(delivery.Input{Kind: delivery.Failed, Cause: cause, N: unread})
	d.disconnect()
	d.logs.out.down(errors.Join(err, aerr), d.spool.Len, time.Time{})
}

// causeOf says what err shows of the receiver's end, and the bytes it left
// unread where a probe counted them.
func causeOf(err error) (delivery.Cause, int) {
	var gone *sockwait.PeerGoneError
	switch {
	case errors.As(err, &gone) && errors.Is(gone.Cause, syscall.ECONNRESET):
		return delivery.CauseReset, gone.Unread
	case gone != nil:
		return delivery.CauseGone, gone.Unread
	case errors.Is(err, errPeerClosed):
		return delivery.CauseFin, 0
	case errors.Is(err, syscall.ECONNRESET):
		return delivery.CauseReset, 0
	case errors.Is(err, sockwait.ErrPeerGone), errors.Is(err, syscall.EPIPE):
		return delivery.CauseBroken, 0
	}
	return delivery.CauseOwn, 0
}

// idleFacts is what delivery needs to plan an idle: whether the gate is
// held, the hang-up unwatched, acknowledgements uncommitted.
func (d *drainer) idleFacts(holding bool) delivery.IdleFacts {
	return delivery.IdleFacts{Holding: holding,
		Unwatched:   d.w.conn != nil && d.w.waiter.Supported() && d.w.hup == nil,
		AcksPending: d.spool.AcksPending()}
}

// deliveryConfigOf maps Options (defaults filled) to delivery's settings.
func deliveryConfigOf(o *Options) delivery.Config {
	c := delivery.Config{Mode: delivery.LastRead, Linger: o.ReplayLinger, WarnAfter: o.WriteTimeout,
		StuckAfter: o.WriteTimeout, StallAfter: o.StallTimeout, WriteTimeout: o.WriteTimeout,
		MaxAttempts: max(o.MaxAttempts, 0), Batch: o.BatchEvents, Backoff: o.MinBackoff, MaxBackoff: o.MaxBackoff,
		Jitter: 0.5, MaxAge: max(o.MaxAge, 0), MaxHold: max(o.MaxHold, 0)}
	switch {
	case o.ReplayWindow < 0 || o.AckOnWrite:
		c.Mode = delivery.NoWindow
	case o.ReplayWindow > 0:
		c.Mode, c.WindowBytes = delivery.FixedBytes, uint64(o.ReplayWindow)
	case o.Network == "tcp":
		c.Mode = delivery.KernelTook
	}
	return c
}
