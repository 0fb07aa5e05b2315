package emitter

import (
	"errors"
	"sync"
	"time"
)

// The live gate: Hold and Release stop and resume writes to the receiver
// while it rebuilds its state. The drainer meets it before each write
// (enterGate, in shell.go) and at the top of its loop (passGate).

// gate is the state Hold and Release share with the drainer.
type gate struct {
	mu      sync.Mutex
	held    bool
	since   time.Duration // Clock.Boot() at the Hold
	gen     uint64        // holds so far: a connection whose preamble is older was held since
	writing bool          // the drainer is writing a chunk
	changed broadcast     // fired when held or writing changes; under mu
}

var errGateLost = errors.New("connection lost while delivery was held")

// Hold shuts the live gate: once Hold returns, nothing more is written to
// the receiver until Release (a chunk under way is finished first, within
// WriteTimeout). The connection is kept; a new connection's Preamble waits
// for Release. Emit carries on spooling, and Flush waits through a hold.
// Holds do not nest. Options.MaxHold bounds how long a hold lasts.
func (e *Emitter) Hold() {
	g := &e.link.pub.gate
	g.mu.Lock()
	first := !g.held
	if first {
		g.held, g.since = true, e.opts.Clock.Boot()
		g.gen++
		g.changed.fire()
	}
	for g.writing {
		ch := g.changed.watch()
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
	g := &e.link.pub.gate
	g.mu.Lock()
	held, since := g.held, g.since
	g.held = false
	if held {
		g.changed.fire()
	}
	g.mu.Unlock()
	if held {
		e.opts.Logger.Info("delivery released", "addr", e.addr,
			"held_for", (e.opts.Clock.Boot() - since).Round(time.Millisecond).String(), "pending_events", e.spool.Len())
	}
}

// Held reports whether the live gate is shut (see Hold).
func (e *Emitter) Held() bool {
	g := &e.link.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}
