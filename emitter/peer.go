package emitter

import (
	"runtime"
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// A receiver still handles what its socket holds after evspool dies. So the
// drainer notes (ledger.PeerFile) the receiver's end of the connection, the
// process that reads it and the last event written; the next start waits for
// that end to close and acknowledges what was written there only if the
// same reader closed it (adoptPeerMark). docs/delivery.md, "When evspool itself
// dies", gives the rules.

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
	d.w.peer.notes = n
}

// peerTriesMax bounds the attempts to identify a connection's receiver,
// whose end has no inode until it accepts.
const peerTriesMax = 100

// peerAcceptWait bounds identifyPeer's wait for the receiver's accept.
const peerAcceptWait = 2 * time.Second

// peerSpins is how many times identifyPeer asks again at once (about a
// millisecond) before it sleeps between attempts: a receiver at hand
// accepts within tens of microseconds, and a sleep under a millisecond
// takes one. Counted, not timed: the spin waits on no clock.
const peerSpins = 100

// identifyPeer notes the receiver's end of a new connection before the first
// write, so that the next start after a kill does not interleave its resend
// with the old connection's last lines. Waiting for the receiver to accept
// costs no delivery: it cannot read before.
func (d *drainer) identifyPeer() {
	if d.w.peer.notes == nil {
		return
	}
	start, spins := d.opts.Clock.Now(), 0
	_ = d.poll(time.Millisecond, func() (time.Duration, error) {
		for ; ; spins++ {
			d.pub.health.beat() // waiting, by design: not wedged
			ino, retry := peerEnd(d.w.conn)
			if ino != 0 {
				d.w.peer.ino = ino
				d.writePeerNote(d.view.acked)
				return 0, nil
			}
			if !retry || d.opts.Clock.Now().Sub(start) > peerAcceptWait || d.ctx.Err() != nil {
				return 0, nil
			}
			if spins >= peerSpins {
				return 50 * time.Millisecond, nil
			}
			runtime.Gosched()
		}
	})
}

// writePeerNote notes that the current receiver end was written through
// seq, with its reader if known.
func (d *drainer) writePeerNote(through uint64) {
	d.w.peer.through, d.w.peer.noted = through, true
	r := d.w.peer.reader
	_ = d.w.peer.notes.Write(ledger.PeerMark{Pid: r.pid, Start: r.start, Stack: r.stack, Ino: d.w.peer.ino, Through: through})
}

// notePeer notes the last event written to the current receiver. Until it
// has accepted, its end cannot be found; retryPeer tries again later.
func (d *drainer) notePeer(through uint64) {
	if d.w.peer.notes == nil || through <= d.w.peer.through {
		return
	}
	d.w.peer.written = max(d.w.peer.written, through)
	if d.w.peer.ino == 0 && d.w.peer.tries < peerTriesMax {
		d.w.peer.tries++
		d.w.peer.ino, _ = peerEnd(d.w.conn)
	}
	if d.w.peer.ino == 0 {
		return
	}
	d.writePeerNote(through)
}

// seekReader starts, once a connection and after the receiver's first read,
// a scan for the one process holding its end (readerOf). The scan of /proc
// is slow, so it runs in its own goroutine; takeReader takes its answer.
func (d *drainer) seekReader() {
	d.takeReader(false)
	if d.w.peer.notes == nil || d.w.peer.sought || !d.view.readSome {
		return
	}
	if d.w.peer.ino == 0 {
		d.retryPeer() // it read, so it accepted: its end can be found now
		if d.w.peer.ino == 0 {
			return
		}
	}
	d.w.peer.sought = true
	ch, ino := make(chan readerScan, 1), d.w.peer.ino
	d.w.peer.scan = ch
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

// takeReader notes the reader the scan found, if it answered (if wait, once
// it does).
func (d *drainer) takeReader(wait bool) {
	if d.w.peer.scan == nil {
		return
	}
	var r readerScan
	if wait {
		r = <-d.w.peer.scan
	} else {
		select {
		case r = <-d.w.peer.scan:
		default:
			return
		}
	}
	d.w.peer.scan = nil
	if r.why != "" {
		if !d.w.peer.told {
			d.w.peer.told = true
			d.opts.Logger.Info("cannot tell which process reads the connection; if evspool dies, what it wrote there is resent",
				"addr", d.addr, "reason", r.why)
		}
		return
	}
	d.w.peer.reader = r.id
	if d.w.peer.noted {
		d.writePeerNote(d.w.peer.through)
	}
}

// retryPeer notes writes made before the receiver's end could be found.
func (d *drainer) retryPeer() {
	if d.w.conn != nil && d.w.peer.written > d.w.peer.through {
		d.notePeer(d.w.peer.written)
	}
}

// adoptPeerMark waits until the receiver's end of an earlier process's last
// connection is closed, then acknowledges what was written there as far as
// the evidence goes (docs/delivery.md, "Handled means proven"): the same
// reader, still alive, and lines before the first one longer than it reads.
func (d *drainer) adoptPeerMark() {
	if d.w.peer.notes == nil {
		return
	}
	m, err := ledger.ReadPeerMark(d.spool.Dir())
	if err != nil {
		return
	}
	defer d.w.peer.notes.Clear()
	closed := d.peerClosed(m.Ino) // also for the order of what is resent
	first := d.spool.FirstSeq()
	if first == 0 || m.Through < first || m.Through > d.spool.LastSeq() {
		return // nothing written there is pending
	}
	id := peerIdent{pid: m.Pid, start: m.Start, stack: m.Stack, ino: m.Ino}
	if reason := "its reader is gone"; m.Pid == 0 || !closed || !id.alive() {
		if m.Pid == 0 {
			reason = "its reader was not known"
		} else if !closed {
			reason = "its end of the connection is still open"
		}
		d.opts.Logger.Info("resending what the previous run wrote to the receiver: nothing shows its reader handled it",
			"events", m.Through-first+1, "from_seq", first, "reason", reason)
		return
	}
	through, long := d.closedEndProves(first, m.Through)
	if long != 0 {
		d.opts.Logger.Info("resending from a line longer than the receiver reads: its closed connection proves nothing after it",
			"seq", long, "max_line", receiverMaxLine)
	}
	if through < first {
		return
	}
	if err := d.spool.Ack(through); err != nil {
		return // resent: duplicates
	}
	n := through - first + 1
	// Logged before Flush can see the progress: one that returns has it.
	d.opts.Logger.Info("the receiver handled what the previous run wrote to it; not resending that",
		"receiver_pid", m.Pid, "events", n, "through_seq", through)
	d.progressed(func(l *linkStats) { l.delivered += n })
}

// closedEndProves returns the last of first..through that a closed end and
// a live reader prove handled: through, or the event before the first line
// over receiverMaxLine (long, else 0), where the receiver's scanner stops.
func (d *drainer) closedEndProves(first, through uint64) (last, long uint64) {
	for seq := first; seq <= through; {
		entries, err := d.spool.Read(seq, 256, 1<<20)
		if err != nil || len(entries) == 0 {
			return first - 1, 0
		}
		for _, e := range entries {
			if e.Seq > through {
				return through, 0
			}
			if len(e.Data)+1 > receiverMaxLine {
				return e.Seq - 1, e.Seq
			}
		}
		seq = entries[len(entries)-1].Seq + 1
	}
	return through, 0
}

// peerClosed waits until the receiver's end ino of the old connection is
// closed, at most StallTimeout, looking every peerPoll.
func (d *drainer) peerClosed(ino uint64) bool {
	deadline := d.opts.Clock.Now().Add(d.opts.StallTimeout)
	closed := false
	_ = d.poll(peerPoll, func() (time.Duration, error) {
		d.pub.health.beat() // waiting, by design: not wedged
		gone, err := unixSocketGone(ino)
		if closed = err == nil && gone; err != nil || gone || d.opts.Clock.Now().After(deadline) {
			return 0, nil
		}
		return peerPoll, nil
	})
	return closed
}

// peerPoll is how often adoptPeerMark looks whether the old end is closed.
const peerPoll = 10 * time.Millisecond

// receiverMaxLine is the longest line, newline included, the receiver reads.
const receiverMaxLine = DefaultMaxEventSize
