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
	"time"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/pathwatch"
	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// drainer owns the connection: the I/O shell around delivery, which makes
// every decision. Its run goroutine acts for it, or, while that idles, an
// Emit caller sending inline; ctl.run makes them one at a time. Others reach
// it only through its link. This file holds the shell's primitives and the
// gate's side; send.go (writing) and the loop (drainer.go) use them, and
// steps.go feeds delivery and carries out its Ready. The drainer's methods
// are in these four files.
type drainer struct {
	addr  string
	opts  *Options // opts.Clock: every wait and every now
	spool *wal.WAL
	ctx   context.Context
	ctl   control
	*link // what others reach: the drainer publishes there and takes their requests

	// Owned by the run goroutine. Every decision is dv's; the rest is I/O.
	dv   *delivery.Delivery
	rd   delivery.Ready // what dv said at its last step (steps.go)
	w    wire
	logs logs
	loss *ledger.Book // shared with Emitter (losses.go)
}

// link is the drainer's doors: all that Emitter's methods use to reach the
// goroutine that owns the connection. They wake it (notify), hand it what
// Emit committed (handoff: sent inline, or it is woken), read what it
// publishes (pub, for Stats, Alive, Ready and Flush; the listener's and
// the outage's counts), shut and open its gate (Hold, Release) and stop it
// (stop, then done is closed). No Emitter method reads a drainer field.
type link struct {
	wake    chan struct{}   // capacity 1: a wake-up pending
	handoff func(committed) // the drainer's notifyFor
	stop    context.CancelFunc
	done    chan struct{}
	pub     shared
	lis     *listener // what the receiver writes (inbound.go)
	out     *outage   // the current outage, logged by the drainer
}

// control is what the run goroutine shares with Emit callers sending in its
// place.
type control struct {
	readTo atomic.Uint64 // newest sequence read on this connection (notifyFor)

	// run is held by whoever acts as the drainer: the run goroutine, except
	// while it idles (parked), or an Emit caller sending inline (sendInline).
	run     sync.Mutex
	parked  bool          // under run: the run goroutine waits in idle, as delivery planned it
	inlined atomic.Uint64 // sends Emit callers made
}

// committed is what one Emit committed: events, from sequence first on.
type committed struct {
	first  uint64
	events [][]byte
}

// last is the sequence of c's last event.
func (c committed) last() uint64 { return c.first + uint64(len(c.events)) - 1 }

// logs are the drainer's rate-limited reports.
type logs struct {
	delivery, deadLetter, preamble reporter  // slow, frozen and crash-looping receivers; poison; preambles
	out                            *outage   // the link's
	lossCheck                      time.Time // see checkLosses
}

// shared is the drainer's state that Emitter's methods read or change.
type shared struct {
	pre      preambleState // see preamble.go
	health   health        // see health.go
	gate     gate          // see gate.go
	mu       sync.Mutex
	progress broadcast // fired as events leave the spool
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

	sent    []wal.Entry      // written, not yet acknowledged: the witness comes from here
	lines   []delivery.Line  // what the last write told delivery (sentLines), reused
	ages    []time.Duration  // the ages of the last batch read (applyAge), reused
	witness wal.Entry        // the newest acknowledged event, resent as proof
	preGen  uint64           // the gate's generation at this connection's last preamble
	watch   *pathwatch.Watch // the socket's directory, while waiting to dial (waitDial)

	in          *inbound    // this connection's reader (inbound.go)
	wroteTo     uint64      // the newest sequence written on this connection
	wroteAt     time.Time   // when this connection last carried anything (ReleaseIdle)
	stateAt     uint64      // wroteTo when the state was last written on this connection (state.go)
	stateBefore uint64      // the events it held were before this sequence; 0: not written yet
	gapTo       uint64      // the newest sequence whose key's state a gap write covered (writeGapState)
	released    bool        // the connection was released idle: dial when there is work (release.go)
	releasedAt  os.FileInfo // the socket's path when it was released; nil: none there
	resumed     bool        // the next connection follows a release: no reconnect
}

// sendRoom is what earlier readings prove about a Unix socket's send buffer:
// its size, and an upper bound of what it holds (the last SIOCOUTQ reading,
// as only the drainer writes). ok is false when either is unknown.
type sendRoom struct {
	sndbuf, queued int
	ok             bool
	readings       int // SO_MEMINFO readings taken on this connection
}

var (
	errAbandoned  = errors.New("receiver stopped reading inside an event; connection abandoned")
	errPeerClosed = errors.New("receiver closed the connection (FIN) after reading everything its kernel took")
	errFrozen     = errors.New("receiver frozen")
	// errNotAccepted is a receiver that asks for the state on accept
	// (Options.StateRequest) and has not: busy with another client, not
	// frozen on what it read.
	errNotAccepted = errors.New("receiver has not accepted the connection")
)

func (d *drainer) noteRead(entries []wal.Entry) {
	if len(entries) > 0 {
		d.ctl.readTo.Store(max(d.ctl.readTo.Load(), entries[len(entries)-1].Seq))
	}
}

func (l *link) notify() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// ack removes the events through seq from the spool and counts them
// delivered, or unproven where delivery says the connection proves no
// handling; the newest is kept as the witness. They are counted before the
// spool lets them go (Flush reads the counts once it sees them gone).
func (d *drainer) ack(seq uint64, proven bool) error {
	n := 0
	for n < len(d.w.sent) && d.w.sent[n].Seq <= seq {
		n++
	}
	count := func(n uint64) {
		d.pub.mu.Lock()
		defer d.pub.mu.Unlock()
		if proven {
			d.pub.link.delivered += n
		} else {
			d.pub.link.unproven += n
		}
	}
	count(uint64(n))
	if n > 0 {
		d.keepWitness(d.w.sent[n-1]) // before the Ack: a deletion it commits keeps it
	}
	if err := d.spool.Ack(seq); err != nil {
		count(-uint64(n)) // they are resent: duplicates
		return err
	}
	if n > 0 {
		d.w.witness = d.w.sent[n-1]
		d.w.sent = append(d.w.sent[:0], d.w.sent[n:]...)
	}
	d.progressed(func(*linkStats) {}) // wakes Flush: they left the spool
	return nil
}

// progressed updates the link stats by f and wakes Flush: events left the
// spool.
func (d *drainer) progressed(f func(*linkStats)) {
	d.pub.mu.Lock()
	defer d.pub.mu.Unlock()
	f(&d.pub.link)
	d.pub.progress.fire()
}

// broadcast wakes every waiter at once by closing a channel, under its
// owner's lock. The channel is made when someone first watches: firing
// while no one waits makes nothing.
type broadcast struct{ ch chan struct{} }

// watch returns the channel closed at the next fire.
func (b *broadcast) watch() <-chan struct{} {
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// fire wakes whoever watches.
func (b *broadcast) fire() {
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
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

// deadLetter appends the oldest pending event seq to the dead-letter file,
// then removes it from the spool: a crash in between duplicates, never
// loses. It reports whether it did.
func (d *drainer) deadLetter(seq uint64) bool {
	entries, err := d.spool.Read(seq, 1, 0)
	if err != nil || len(entries) == 0 || entries[0].Seq != seq {
		d.opts.Logger.Error("cannot read a poison event to set it aside", "seq", seq, "error", err)
		return false
	}
	e := entries[0]
	attempts := d.rd.Strikes.N
	dl := ledger.DeadLetter{Seq: seq, Appended: e.Time, At: d.opts.Clock.Now(), Attempts: attempts, Data: e.Data}
	path := filepath.Join(d.spool.Dir(), ledger.DeadLetterFile)
	if err := ledger.AppendDeadLetter(d.spool.Dir(), dl, d.opts.MaxDeadLetterBytes); err != nil {
		d.logs.deadLetter.warn(d.opts.Logger, "cannot set a poison event aside; it stays spooled and is retried",
			"seq", seq, "file", path, "error", err.Error())
		return false
	}
	if d.opts.StateKey != nil {
		if err := d.spool.SetStateAside(seq); err != nil { // before the Ack: a crash sets it aside again
			d.opts.Logger.Error("cannot keep a poison event out of the state; it stays spooled and is retried",
				"seq", seq, "error", err)
			return false
		}
	}
	d.loss.Note(ledger.DeadLettered, 1) // before the spool lets it go, as ack counts
	if err := d.spool.Ack(seq); err != nil {
		d.loss.Undo(ledger.DeadLettered, 1) // set aside again, and counted then
		d.opts.Logger.Error("poison event set aside but not removed from the spool; it will be set aside again",
			"seq", seq, "error", err)
		return false
	}
	d.opts.Logger.Error("event set aside in the dead-letter file: the receiver failed on it repeatedly",
		"seq", seq, "attempts", attempts, "bytes", len(e.Data), "first_bytes", excerpt(e.Data),
		"file", path, "hint", "list with 'evspool inspect --spool DIR --dead-letters'; re-inject with '--dead-letters --raw | evspool run ...'")
	d.progressed(func(*linkStats) {})
	return true
}

// excerpt is how a log line shows an event: its first 80 bytes, quoted.
func excerpt(data []byte) string { return fmt.Sprintf("%.80q", data) }

// saveStrikes keeps delivery's strike record, and the witness, in the spool.
func (d *drainer) saveStrikes() {
	s := d.rd.Strikes
	if err := ledger.SaveStrikes(d.spool, d.strikeRecord(d.w.witness, s.Seq != 0 && d.w.witness.Seq == s.Witness)); err != nil {
		d.logs.deadLetter.warn(d.opts.Logger, "cannot save a suspect event's strikes; a restart counts them again",
			"seq", s.Seq, "error", err.Error())
	}
}

// keepWitness keeps w, about to be acknowledged, as the witness in the
// spool's next commit, with the strikes: so that a restarted process can
// blame a poison event that follows it. A witness over
// ledger.MaxKeptWitness is kept only with a strike (saveStrikes).
func (d *drainer) keepWitness(w wal.Entry) {
	if len(w.Data) > ledger.MaxKeptWitness {
		return
	}
	if err := ledger.KeepWitness(d.spool, d.strikeRecord(w, true)); err != nil {
		d.logs.deadLetter.warn(d.opts.Logger, "cannot keep the newest handled event; a restart may not blame a poison event after it",
			"seq", w.Seq, "error", err.Error())
	}
}

// strikeRecord is delivery's strikes with w as the witness if keep, or if
// it is small enough to keep (ledger.MaxKeptWitness).
func (d *drainer) strikeRecord(w wal.Entry, keep bool) ledger.Strikes {
	s := d.rd.Strikes
	rec := ledger.Strikes{Seq: s.Seq, Count: s.N}
	if w.Seq != 0 && (keep || len(w.Data) <= ledger.MaxKeptWitness) {
		rec.WitnessSeq, rec.Witness = w.Seq, w.Data
	}
	return rec
}

// restoreStrikes takes the strike record, and the witness, an earlier
// process saved.
func (d *drainer) restoreStrikes() {
	rec, err := ledger.LoadStrikes(d.spool)
	if err != nil {
		d.opts.Logger.Warn("cannot read the suspect event's strikes; counting them again", "error", err.Error())
	}
	oldest := d.spool.FirstSeq()
	if oldest == 0 {
		oldest = d.spool.LastSeq() + 1 // none pending: the next one appended
	}
	d.step(delivery.Input{Kind: delivery.Restore, Seq: oldest,
		Strikes: delivery.Strikes{Seq: rec.Seq, N: rec.Count, Witness: rec.WitnessSeq}})
	if rec.WitnessSeq != 0 {
		d.w.witness = wal.Entry{Seq: rec.WitnessSeq, Data: rec.Witness}
	}
}

// notAccepted reports whether the receiver, which asks for the state when
// it accepts a connection, has written nothing on this one.
func (d *drainer) notAccepted() bool {
	return d.opts.StateKey != nil && d.opts.StateRequest != nil && d.w.in != nil && d.w.in.got.Load() == 0
}

// logNote logs what delivery noted, rate-limited.
func (d *drainer) logNote(n delivery.Note) {
	stalled := d.opts.Clock.Now().Sub(n.Since)
	switch n.Kind {
	case delivery.NoteSlow:
		d.record(func(l *linkStats) { l.stalls++ }, nil)
		d.logs.delivery.warn(d.opts.Logger, "receiver is not reading; keeping the connection", "addr", d.addr,
			"stalled_for", stalled.Round(time.Millisecond).String())
	case delivery.NoteFrozen:
		err := fmt.Errorf("%w: read nothing for %v; keeping its connection and writing nothing new until it reads",
			errFrozen, stalled.Round(time.Second))
		if d.notAccepted() {
			err = fmt.Errorf("%w: it has not asked for the state in %v, as it does when it accepts a connection "+
				"(it serves another client, or is stuck); keeping the connection and writing nothing new until it reads",
				errNotAccepted, stalled.Round(time.Second))
		}
		d.logs.out.down(err, d.spool.Len, n.Since)
	case delivery.NoteStuck:
		d.opts.Logger.Warn("receiver stopped reading inside an event (a line too long for it?); abandoning the connection",
			"addr", d.addr, "seq", n.Seq, "stalled_for", stalled.Round(time.Millisecond).String())
	case delivery.NoteCrashLoop:
		// The oldest pending event: the one to look at if the receiver dies
		// on it alone (no handled event before it is evidence).
		attrs := []any{"addr", d.addr, "pending_events", d.spool.Len()}
		if es, err := d.spool.Read(d.spool.FirstSeq(), 1, 0); err == nil && len(es) == 1 {
			attrs = append(attrs, "oldest_seq", es[0].Seq, "oldest_first_bytes", excerpt(es[0].Data))
		}
		d.logs.delivery.warn(d.opts.Logger, fmt.Sprintf("receiver crash-looping: failed %d times in a row before handling an event; backing off", n.N),
			attrs...)
	case delivery.NoteStrike:
		d.opts.Logger.Warn("receiver failed on an event; isolating it", "seq", n.Seq, "strikes", n.N,
			"max_attempts", d.opts.MaxAttempts)
	}
}

// sleep waits dur on the clock; false if the drainer was stopped.
func (d *drainer) sleep(dur time.Duration) bool {
	slept := false
	return d.poll(func() (time.Duration, error) {
		if slept {
			return 0, nil
		}
		slept = true
		return dur, nil
	}) == nil
}

// poll calls look until it returns a zero pause or an error, waiting the
// pause it returned between two calls (delivery's polling policy). It
// returns ctx's error once the drainer is stopped.
func (d *drainer) poll(look func() (time.Duration, error)) error {
	var t Timer
	for {
		pause, err := look()
		if err != nil || pause <= 0 {
			return err
		}
		if t == nil {
			t = d.opts.Clock.NewTimer(pause)
			defer t.Stop()
		} else {
			t.Reset(pause)
		}
		select {
		case <-t.C():
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
	}
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

func (d *drainer) disconnect() {
	if d.w.conn == nil {
		return
	}
	d.w.unhook()
	d.w.conn.Close()
	<-d.w.in.done // a closed connection's read returns at once
	d.w.conn, d.w.waiter, d.w.hup, d.w.in = nil, nil, nil, nil
	d.record(func(l *linkStats) { l.connected = false }, nil)
}

// gateState reports whether the gate is open, its generation, the channel
// closed at its next change and a timer channel for what a hold has left
// (nil: no limit; stop it). A hold delivery finds too long (MaxHold) is
// released.
func (d *drainer) gateState() (open bool, gen uint64, changed <-chan struct{}, limit <-chan time.Time, stop func()) {
	g := &d.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	stop = func() {}
	if g.held {
		held := d.opts.Clock.Boot() - g.since
		release, left := d.dv.Hold(held)
		if !release {
			if left <= 0 {
				return false, g.gen, g.changed.watch(), nil, stop
			}
			t := d.opts.Clock.NewTimer(left)
			return false, g.gen, g.changed.watch(), t.C(), func() { t.Stop() }
		}
		g.held = false
		g.changed.fire()
		d.opts.Logger.Warn("delivery held longer than the maximum; released without Release",
			"addr", d.addr, "held_for", held.Round(time.Millisecond).String(), "max_hold", d.opts.MaxHold.String())
	}
	return !g.held, g.gen, g.changed.watch(), nil, stop
}

// A write meets the gate one of three ways: the drainer's events wait while
// it is shut; an Emit caller's (inline) wait for nothing; the preamble's and
// the state's (raw) wait like the drainer's but are never held back for a
// preamble, being it or coming after it.
type gateWay int

const (
	gateEvents gateWay = iota
	gateInline
	gateRaw
)

// errPreambleDue is events met at the gate with a preamble due since a hold
// (PreambleOnRelease): it goes first (passGate).
var errPreambleDue = errors.New("a preamble is due before the next events")

// enterGate waits while the gate is shut and marks a write under way, for
// Hold to wait on; leaveGate ends it. Events with a preamble due since a
// hold get errPreambleDue, having waited out the hold; inline, a shut gate
// is errWouldWait.
func (d *drainer) enterGate(way gateWay) error {
	for {
		held, preamble := d.tryGate(way)
		switch {
		case !held && !preamble:
			return nil
		case preamble:
			return errPreambleDue
		case way == gateInline:
			return errWouldWait
		}
		open, _, changed, limit, stop := d.gateState()
		if open {
			stop()
			continue // released since the look, or held past MaxHold: try again
		}
		select {
		case <-changed:
		case <-limit:
		case <-d.ctx.Done():
		}
		stop()
		if err := d.ctx.Err(); err != nil {
			return err
		}
	}
}

// tryGate marks a write under way if the gate is open and, for events, no
// preamble is due since a hold; else it says which.
func (d *drainer) tryGate(way gateWay) (held, preamble bool) {
	g := &d.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		return true, false
	}
	if way != gateRaw && d.opts.PreambleOnRelease && g.gen != d.w.preGen {
		return false, true
	}
	g.writing = true
	return false, false
}

func (d *drainer) leaveGate() {
	g := &d.pub.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writing = false
	g.changed.fire()
}

// checkLosses has the ledger log the rest of its rate-limited lines, at
// most every lossCheckEvery.
func (d *drainer) checkLosses() {
	if now := d.opts.Clock.Now(); now.Sub(d.logs.lossCheck) >= lossCheckEvery {
		d.logs.lossCheck = now
		d.loss.Tick()
	}
}
