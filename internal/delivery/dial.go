package delivery

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The pause before each dial is delivery's, from backoff/v4 (jittered):
// after refused dials (the receiver is down) it grows to MaxBackoff; after
// connections that handled nothing it grows to CrashPause. A connection
// that handled something resets it.
//
// On a Unix socket the path appearing (the receiver binding) ends the wait,
// and the refused dials that follow until it listens are retried on a
// second backoff, quickDials pauses within milliseconds, as listen(2)
// follows bind(2). In a crash loop (from the second empty connection in a
// row) the path appearing ends the wait only once the receiver has stayed
// down pacedRestart: a supervisor that restarts it no faster paces it
// already, and the crash pause paces only a faster loop.

const (
	quickDials = 25
	quickFirst = 250 * time.Microsecond
	quickMax   = 2 * time.Millisecond
)

// pacedRestart is how long a crash-looping receiver must stay down for its
// return to end the crash pause.
const pacedRestart = 250 * time.Millisecond

// dialPlan is when the next dial may be made.
type dialPlan struct {
	bo      *backoff.ExponentialBackOff // refused dials and failed connections
	binding backoff.BackOff             // refused dials since the path appeared; Stop once spent
	quick   bool                        // binding's pauses apply
	at      time.Time                   // no dial before
	downAt  time.Time                   // when the last connection failed
}

func newDialPlan(cfg Config) dialPlan {
	bo := &backoff.ExponentialBackOff{InitialInterval: cfg.Backoff, RandomizationFactor: cfg.Jitter,
		Multiplier: 2, MaxInterval: max(cfg.CrashPause, cfg.MaxBackoff), Stop: backoff.Stop, Clock: noClock{}}
	quick := &backoff.ExponentialBackOff{InitialInterval: quickFirst, Multiplier: 2, MaxInterval: quickMax,
		Stop: backoff.Stop, Clock: noClock{}}
	p := dialPlan{bo: bo, binding: backoff.WithMaxRetries(quick, quickDials)}
	bo.Reset()
	p.binding.Reset()
	return p
}

// backOff plans the dial after a connection ended at now: at once after one
// that handled something, else after the backoff's next pause.
func (d *Delivery) backOff(now time.Time, failed bool) {
	d.dial.quick = false
	if !failed {
		d.dial.bo.Reset()
		d.dial.at = now
		return
	}
	limit := d.cfg.MaxBackoff
	if d.crashLooping() {
		limit = d.cfg.CrashPause
	}
	d.dial.at, d.dial.downAt = now.Add(min(d.dial.bo.NextBackOff(), limit)), now
}

// crashLooping reports whether connections keep failing before they handle
// anything: two or more in a row.
func (d *Delivery) crashLooping() bool { return d.empty >= 2 }

// dialFailed plans the dial after a refused one: the backoff's next pause,
// or a quick one soon after the path appeared.
func (d *Delivery) dialFailed(now time.Time) {
	p := min(d.dial.bo.NextBackOff(), d.cfg.MaxBackoff)
	if d.dial.quick {
		if q := d.dial.binding.NextBackOff(); q != backoff.Stop {
			p = min(p, q)
		}
	}
	d.dial.at = now.Add(p)
}

// appeared records the socket path appearing at now (the receiver binds):
// the wait ends, unless a crash loop's pause stands.
func (d *Delivery) appeared(now time.Time) {
	if d.crashLooping() && now.Sub(d.dial.downAt) < pacedRestart {
		return
	}
	d.dial.binding.Reset()
	d.dial.quick, d.dial.at = true, now
}

// noClock is the backoffs' clock: they never give up (MaxElapsedTime 0), so
// they need no time, and delivery reads none.
type noClock struct{}

func (noClock) Now() time.Time { return time.Time{} }
