package emitter

import (
	"runtime"
	"time"

	"github.com/evspool/evspool/wal"
)

// Evspool's own crash, the receiver alive. A receiver still reads and
// handles what its socket holds after evspool dies, then sees EOF and closes
// its end. So the drainer notes, at each write, which receiver process it
// writes to (SO_PEERCRED's pid, with its start time and stack address from
// /proc, so that another process with the same pid, or the same one
// re-executed, is not taken for it) and the last event written
// (wal.PeerFile), and notes the receiver before the connection's first
// write (identifyPeer). At the next start, if that receiver is still the same
// process and has closed its end of the old connection (it read that
// connection to the end), everything written there was handled: it is
// acknowledged, not resent. Waiting for the close also keeps the order: the
// old connection's last lines are handled before the new one's first.
// Where it cannot tell (TCP, another pid namespace, a window of a fixed
// size, whose receiver may not have handled what it read, a receiver that
// keeps the old connection open), the replay window decides as after any
// other failure.

// peerNote is what the drainer notes of the current receiver.
type peerNote struct {
	notes   *wal.PeerNotes
	id      peerIdent
	ok      bool   // id is known
	tries   int    // attempts to identify it on this connection
	through uint64 // the last sequence noted
	written uint64 // the last sequence written on this connection
	noted   bool   // the file names this connection's receiver
}

// peerPoll is how often the start-up check looks whether the receiver has
// closed its end of the old connection.
const peerPoll = 10 * time.Millisecond

// openPeerNotes opens the notes, where they can be used.
func (d *drainer) openPeerNotes() {
	if d.opts.Network != "unix" || d.dv.cfg.mode != lastRead {
		return
	}
	n, err := wal.OpenPeerNotes(d.spool.Dir())
	if err != nil {
		d.opts.Logger.Warn("cannot note the receiver written to; after a crash its window is resent", "error", err.Error())
		return
	}
	d.peer.notes = n
}

// peerTriesMax bounds the attempts to identify a connection's receiver: its
// end of the connection has an inode only once it accepted it, so the first
// attempts, right after connecting, can fail.
const peerTriesMax = 100

// peerAcceptWait bounds how long a new connection waits for its receiver to
// accept it before anything is written on it (see identifyPeer).
const peerAcceptWait = 2 * time.Second

// identifyPeer identifies the receiver of the connection just made, before
// anything is written on it, and notes it with nothing of this connection
// written (Through: the last event acknowledged). Without that note, an
// evspool killed after its first write but before its receiver could be
// identified left none, so the next start neither knew what was handled
// nor waited for the old connection's close: it resent while the receiver,
// which handles each connection in its own goroutine, still handled the
// old one's lines, and they interleaved (out of order; TestPrecisionEvspoolKills
// in make torture, about 1 run in 6, where the receiver took up to a second
// to accept). Until the receiver accepts, its end of the connection has no
// inode; it cannot read before then either, so waiting costs no delivery.
// A receiver that has not accepted after peerAcceptWait is written to as
// before (notePeer identifies it at a later write).
func (d *drainer) identifyPeer() {
	if d.peer.notes == nil {
		return
	}
	start := d.clk.Now()
	interval := time.Millisecond
	for {
		d.health.beat() // waiting, by design: not wedged
		id, ok, retry := identify(d.w.conn)
		if ok {
			d.peer.id, d.peer.ok = id, true
			d.writePeerNote(d.dv.acked)
			return
		}
		waited := d.clk.Now().Sub(start)
		if !retry || waited > peerAcceptWait || d.ctx.Err() != nil {
			return
		}
		if waited < peerSpin {
			runtime.Gosched()
			continue
		}
		if !d.sleep(interval) {
			return
		}
		interval = min(2*interval, 50*time.Millisecond)
	}
}

// peerSpin is how long identifyPeer asks again at once, before it sleeps
// between attempts: a receiver at hand accepts within tens of
// microseconds, and a sleep under a millisecond takes one (the runtime's
// poller counts in milliseconds), which a receiver's restart would wait
// (BenchmarkResume went from 1.0 to 1.6-2.2 ms with 100 µs sleeps). An
// attempt costs about ten system calls; the spin, at most a millisecond of
// one core, once a connection.
const peerSpin = time.Millisecond

// writePeerNote notes that the current receiver has been written through
// seq (or, from identifyPeer, nothing beyond what is acknowledged).
func (d *drainer) writePeerNote(through uint64) {
	d.peer.through, d.peer.noted = through, true
	p := d.peer.id
	_ = d.peer.notes.Write(wal.PeerMark{Pid: p.pid, Start: p.start, Stack: p.stack, Ino: p.ino, Through: through})
}

// notePeer notes the last event written to the current receiver. Until the
// receiver has accepted the connection it cannot be identified; the idle
// check and the drainer's stop try again (retryPeer), so that a burst
// written in one or two writes before the accept is still noted.
func (d *drainer) notePeer(through uint64) {
	if d.peer.notes == nil || through <= d.peer.through {
		return
	}
	d.peer.written = max(d.peer.written, through)
	if !d.peer.ok && d.peer.tries < peerTriesMax {
		d.peer.tries++
		d.peer.id, d.peer.ok, _ = identify(d.w.conn)
	}
	if !d.peer.ok {
		return
	}
	d.writePeerNote(through)
}

// retryPeer notes what was written to a receiver that could not be
// identified at the write.
func (d *drainer) retryPeer() {
	if d.w.conn != nil && d.peer.written > d.peer.through {
		d.notePeer(d.peer.written)
	}
}

// forgetPeer clears the note: the receiver hung up, or the connection was
// abandoned, so what it had not read is resent anyway.
func (d *drainer) forgetPeer() {
	if d.peer.notes != nil && d.peer.noted {
		_ = d.peer.notes.Clear()
	}
	d.peer.ok, d.peer.through, d.peer.written, d.peer.noted = false, 0, 0, false
}

// adoptPeerMark acknowledges what an earlier process wrote to a receiver that
// is still the same process and has read that connection to its end.
func (d *drainer) adoptPeerMark() {
	if d.peer.notes == nil {
		return
	}
	m, err := wal.ReadPeerMark(d.spool.Dir())
	if err != nil {
		return
	}
	defer d.peer.notes.Clear()
	id := peerIdent{pid: m.Pid, start: m.Start, stack: m.Stack, ino: m.Ino}
	if !id.alive() || !d.peerClosed(id) || !id.alive() {
		return
	}
	first := d.spool.FirstSeq()
	if first == 0 || m.Through < first || m.Through > d.spool.LastSeq() {
		return
	}
	if err := d.spool.Ack(m.Through); err != nil {
		return // resent: duplicates
	}
	n := m.Through - first + 1
	// Logged before Flush can see the progress: one that returns has it.
	d.opts.Logger.Info("the receiver handled what the previous run wrote to it; not resending that",
		"receiver_pid", m.Pid, "events", n, "through_seq", m.Through)
	d.mu.Lock()
	d.link.delivered += n
	d.signalProgress()
	d.mu.Unlock()
}

// peerClosed waits until the receiver has closed its end of the old
// connection, at most StallTimeout.
func (d *drainer) peerClosed(id peerIdent) bool {
	deadline := d.clk.Now().Add(d.opts.StallTimeout)
	for {
		d.health.beat() // waiting, by design: not wedged
		gone, err := unixSocketGone(id.ino)
		if err != nil || gone {
			return err == nil
		}
		if d.clk.Now().After(deadline) || !d.sleep(peerPoll) {
			return false
		}
	}
}
