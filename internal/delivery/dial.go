package delivery

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The pause before each dial is delivery's, from one backoff (backoff/v4,
// jittered): after refused dials (the receiver is down) it grows to
// MaxBackoff, and a Unix socket's path appearing ends it (the receiver is
// binding: up to quickDials refused dials are then retried within
// milliseconds, as listen(2) follows bind(2)); after connections that
// handled nothing it grows to CrashPause, and from the second in a row the
// path appearing does not end it: a crash-looping receiver binds anew at
// each start. A connection that handled something resets it.

const (
	quickDials = 25
	quickFirst = 250 * time.Microsecond
	quickMax   = 2 * time.Millisecond
)

// dialPlan is when the next dial may be made.
type dialPlan struct {
	bo    *backoff.ExponentialBackOff
	at    time.Time // no dial before
	early bool      // the path appearing may end the wait
	quick int       // quick re-dials left since the path appeared
}

// backOff plans the dial after a connection ended at now: at once after one
// that handled something, else after the backoff's next pause.
func (d *Delivery) backOff(now time.Time, failed bool) {
	if !failed {
		d.dial.bo.Reset()
		d.dial.at, d.dial.early = now, false
		return
	}
	limit, early := d.cfg.MaxBackoff, d.empty < 2
	if !early {
		limit = d.cfg.CrashPause
	}
	d.dial.at, d.dial.early = now.Add(min(d.dial.bo.NextBackOff(), limit)), early
}

// dialFailed plans the dial after a refused one: the backoff's next pause,
// or a quick one soon after the path appeared.
func (d *Delivery) dialFailed(now time.Time) {
	p := min(d.dial.bo.NextBackOff(), d.cfg.MaxBackoff)
	if d.dial.quick > 0 {
		p = min(p, quickFirst<<min(quickDials-d.dial.quick, 3), quickMax)
		d.dial.quick--
	}
	d.dial.at, d.dial.early = now.Add(p), true
}

// noClock is the backoff's clock: it never gives up (MaxElapsedTime 0), so
// it needs no time, and delivery reads none.
type noClock struct{}

func (noClock) Now() time.Time { return time.Time{} }
