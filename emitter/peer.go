package emitter

import (
	"runtime"
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// Evspool's own crash, the receiver alive. A receiver still reads and
// handles what its socket holds after evspool dies, then sees EOF and closes
// its end. So the drainer notes (ledger.PeerFile) the receiver's end of the
// connection (its inode, before the first write: identifyPeer), the process
// that reads it (the one process holding that end, looked for once, after
// its first read: seekReader), and the last event written. At the next
// start it waits until that end is closed, which keeps the order (the old
// connection's last lines are handled before the new one's first), and
// acknowledges what was written there only on evidence (adoptPeerMark): the
// reader is still the same process (pid, start time, stack address, which
// re-executing changes), so it did not die with lines unread, and it closed
// its end, so it stopped reading there: at the end, or at a line longer
// than it reads (cloud-event-proxy's scanner fails on it, and a garbage
// collection closes the connection later). Adoption stops before the first
// such line. Where it cannot tell (TCP, a window of a fixed size, whose
// receiver may not have handled what it read, no single reader, a reader in
// another pid namespace, an end still open after StallTimeout), what was
// written is resent, as after any other failure.

// peerNote is what the drainer notes of the current connection's receiver.
type peerNote struct {
	notes   *ledger.PeerNotes
	ino     uint64          // the receiver's end of this connection; 0: not known yet
	reader  peerIdent       // the process that reads it; pid 0: not known
	sought  bool            // the reader was looked for on this connection
	told    bool            // a connection without a known reader was logged
	tries   int             // attempts to find the receiver's end on this connection
	through uint64          // the last sequence noted
	written uint64          // the last sequence written on this connection
	noted   bool            // the file names this connection's receiver end
	scan    chan readerScan // the reader scan in flight on this connection
}

// openPeerNotes opens the notes, where they can be used.
func (d *drainer) openPeerNotes() {
	if d.opts.Network != "unix" || deliveryConfigOf(d.opts).mode != lastRead {
		return
	}
	n, err := ledger.OpenPeerNotes(d.spool.Dir())
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

// identifyPeer finds the receiver's end of the connection just made, before
// anything is written on it, and notes it with nothing of this connection
// written (Through: the last event acknowledged): an evspool killed after its
// first write then leaves a note, and the next start waits for the old
// connection's close before resending, instead of interleaving its resend
// with the old connection's last lines (a receiver that reads connections
// side by side). Until the receiver accepts, its end has no inode; it
// cannot read before then either, so waiting costs no delivery. A receiver
// that has not accepted after peerAcceptWait is written to as before
// (notePeer finds its end at a later write).
func (d *drainer) identifyPeer() {
	if d.peer.notes == nil {
		return
	}
	start := d.clk.Now()
	interval := time.Millisecond
	for spins := 0; ; spins++ {
		d.health.beat() // waiting, by design: not wedged
		ino, retry := peerEnd(d.w.conn)
		if ino != 0 {
			d.peer.ino = ino
			d.writePeerNote(d.view.acked)
			return
		}
		waited := d.clk.Now().Sub(start)
		if !retry || waited > peerAcceptWait || d.ctx.Err() != nil {
			return
		}
		if spins < peerSpins {
			runtime.Gosched()
			continue
		}
		if !d.sleep(interval) {
			return
		}
		interval = min(2*interval, 50*time.Millisecond)
	}
}

// peerSpins is how many times identifyPeer asks again at once (about a
// millisecond) before it sleeps between attempts: a receiver at hand
// accepts within tens of microseconds, and a sleep under a millisecond
// takes one (the runtime's poller counts in milliseconds). Counted, not
// timed: the spin waits on no clock.
const peerSpins = 100

// writePeerNote notes that the current receiver end has been written
// through seq (or, from identifyPeer, nothing beyond what is acknowledged),
// with its reader if it is known.
func (d *drainer) writePeerNote(through uint64) {
	d.peer.through, d.peer.noted = through, true
	r := d.peer.reader
	_ = d.peer.notes.Write(ledger.PeerMark{Pid: r.pid, Start: r.start, Stack: r.stack, Ino: d.peer.ino, Through: through})
}

// notePeer notes the last event written to the current receiver. Until the
// receiver has accepted the connection its end cannot be found; the idle
// check and the drainer's stop try again (retryPeer), so that a burst
// written in one or two writes before the accept is still noted.
func (d *drainer) notePeer(through uint64) {
	if d.peer.notes == nil || through <= d.peer.through {
		return
	}
	d.peer.written = max(d.peer.written, through)
	if d.peer.ino == 0 && d.peer.tries < peerTriesMax {
		d.peer.tries++
		d.peer.ino, _ = peerEnd(d.w.conn)
	}
	if d.peer.ino == 0 {
		return
	}
	d.writePeerNote(through)
}

// seekReader starts looking, once a connection, after the receiver's first
// read on it, for the process that reads it: the one process holding its
// end (readerOf: a scan of /proc, milliseconds to a tenth of a second, see
// BenchmarkReaderScan), in a goroutine of its own, so that delivery does not
// wait for it; takeReader takes its answer. Without a reader, what is
// written on the connection is resent if evspool dies, and the log says so,
// once.
func (d *drainer) seekReader() {
	d.takeReader(false)
	if d.peer.notes == nil || d.peer.sought || !d.view.readSome {
		return
	}
	if d.peer.ino == 0 {
		d.retryPeer() // it read, so it accepted: its end can be found now
		if d.peer.ino == 0 {
			return
		}
	}
	d.peer.sought = true
	ch, ino := make(chan readerScan, 1), d.peer.ino
	d.peer.scan = ch
	d.scans.Add(1)
	go func() {
		defer d.scans.Done()
		id, why := readerOf(ino)
		ch <- readerScan{id: id, why: why}
		d.notify() // an idle drainer takes it at once
	}()
}

// readerScan is the answer of a look for a connection's reader.
type readerScan struct {
	id  peerIdent
	why string // why no single reader, if none
}

// takeReader notes the reader the current connection's scan found, if it
// has answered (wait: once it has).
func (d *drainer) takeReader(wait bool) {
	if d.peer.scan == nil {
		return
	}
	var r readerScan
	if wait {
		r = <-d.peer.scan
	} else {
		select {
		case r = <-d.peer.scan:
		default:
			return
		}
	}
	d.peer.scan = nil
	if r.why != "" {
		if !d.peer.told {
			d.peer.told = true
			d.opts.Logger.Info("cannot tell which process reads the connection; if evspool dies, what it wrote there is resent",
				"addr", d.addr, "reason", r.why)
		}
		return
	}
	d.peer.reader = r.id
	if d.peer.noted {
		d.writePeerNote(d.peer.through)
	}
}

// retryPeer notes what was written to a receiver whose end could not be
// found at the write.
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
	d.resetPeer()
}

// resetPeer forgets the connection's receiver (a new connection, or none).
func (d *drainer) resetPeer() {
	told := d.peer.told
	d.peer = peerNote{notes: d.peer.notes, told: told}
}
