package emitter

import (
	"errors"
	"sync"
	"time"
)

// The live gate: Hold and Release stop and resume writes to the receiver
// while it rebuilds its state. The drainer meets it before each write
// (enterGate) and at the top of its loop (passGate).

// gate is the state Hold and Release share with the drainer.
type gate struct {
	mu      sync.Mutex
	held    bool
	since   time.Duration // Clock.Boot() at the Hold
	gen     uint64        // holds so far: a connection whose preamble is older was held since
	writing bool          // the drainer is writing a chunk
	changed chan struct{} // closed and replaced when held or writing changes
}

// signal wakes whoever waits on the gate; g.mu must be held.
func (g *gate) signal() {
	if g.changed != nil {
		close(g.changed)
	}
	g.changed = make(chan struct{})
}

// watch returns the channel closed at the gate's next change; g.mu is held.
func (g *gate) watch() <-chan struct{} {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

// Hold shuts the live gate: once Hold returns, nothing more is written to
// the receiver until Release (a chunk under way is finished first, within
// WriteTimeout). The connection is kept; a new connection's Preamble waits
// for Release. Emit carries on spooling, and Flush waits through a hold.
// Holds do not nest. Options.MaxHold bounds how long a hold lasts.
func (e *Emitter) Hold() {
	g := &e.d.gate
	g.mu.Lock()
	first := !g.held
	if first {
		g.held, g.since = true, e.opts.Clock.Boot()
		g.gen++
		g.signal()
	}
	for g.writing {
		ch := g.watch()
		g.mu.Unlock()
		<-ch
		g.mu.Lock()
	}
	g.mu.Unlock()
	if first { // outside the lock: Len may wait on a commit
		e.opts.Logger.Info("delivery held", "addr", e.addr, "pending_events", e.spool.Len())
	}
}

// Release opens the live gate that Hold shut, writing the Preamble again
// first if Options.PreambleOnRelease is set. Without a Hold it does nothing.
func (e *Emitter) Release() {
	g := &e.d.gate
	g.mu.Lock()
	held, since := g.held, g.since
	g.held = false
	if held {
		g.signal()
	}
	g.mu.Unlock()
	if held {
		e.opts.Logger.Info("delivery released", "addr", e.addr,
			"held_for", (e.opts.Clock.Boot() - since).Round(time.Millisecond).String(), "pending_events", e.spool.Len())
	}
}

// Held reports whether the live gate is shut (see Hold).
func (e *Emitter) Held() bool {
	g := &e.d.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// gateState reports whether the gate is open, its generation, the channel
// closed at its next change and how long a hold has left (0: no limit). It
// releases a hold older than MaxHold.
func (d *drainer) gateState() (open bool, gen uint64, changed <-chan struct{}, left time.Duration) {
	g := &d.gate
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
	check := d.clk.NewTimer(idleCheck)
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
	_, d.preGen, _, _ = d.gateState()
	return d.preamble()
}

var errGateLost = errors.New("connection lost while delivery was held")

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
	if _, gen, _, _ := d.gateState(); gen != d.preGen {
		d.preGen = gen
		return d.preamble() == nil
	}
	return true
}

// enterGate waits while the gate is shut and marks a write under way, for
// Hold to wait on; leaveGate ends it. waited means an earlier deadline is stale.
func (d *drainer) enterGate() (waited bool, err error) {
	for {
		open, _, changed, left := d.gateState()
		if open && d.gate.startWrite() {
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

// startWrite marks a write under way unless the gate is shut.
func (g *gate) startWrite() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		return false
	}
	g.writing = true
	return true
}

func (d *drainer) leaveGate() {
	g := &d.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writing = false
	g.signal()
}

// gatedWrite writes one chunk through the gate and returns SIOCOUTQ just
// before it (see wrote). A fresh reading, not the room's upper bound, lets
// delivery see this write read as soon as it is.
func (d *drainer) gatedWrite(chunk []byte) (n, before int, err error) {
	if _, err := d.enterGate(); err != nil {
		return 0, 0, err
	}
	defer d.leaveGate()
	if err := d.armWrite(); err != nil {
		return 0, 0, err
	}
	before, _ = d.unread()
	n, err = d.w.conn.Write(chunk)
	return n, before, err
}
