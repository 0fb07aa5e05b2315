package emitter

import (
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// peerPoll is how often adoptPeerMark looks whether the old end is closed.
const peerPoll = 10 * time.Millisecond

// adoptPeerMark waits until the receiver's end of an earlier process's last
// connection is closed, then acknowledges what was written there as far as
// the evidence goes (docs/delivery.md, "Handled means proven"): the same
// reader, still alive, and lines before the first one longer than it reads.
func (d *drainer) adoptPeerMark() {
	if d.peer.notes == nil {
		return
	}
	m, err := ledger.ReadPeerMark(d.spool.Dir())
	if err != nil {
		return
	}
	defer d.peer.notes.Clear()
	closed := d.peerClosed(m.Ino) // also for the order of what is resent
	first := d.spool.FirstSeq()
	if first == 0 || m.Through < first || m.Through > d.spool.LastSeq() {
		return // nothing written there is pending
	}
	id := peerIdent{pid: m.Pid, start: m.Start, stack: m.Stack, ino: m.Ino}
	if m.Pid == 0 || !closed || !id.alive() {
		d.opts.Logger.Info("resending what the previous run wrote to the receiver: nothing shows its reader handled it",
			"events", m.Through-first+1, "from_seq", first, "reason", adoptRefusal(m.Pid, closed))
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
	d.mu.Lock()
	d.link.delivered += n
	d.signalProgress()
	d.mu.Unlock()
}

// adoptRefusal says why nothing written to the previous receiver is adopted.
func adoptRefusal(pid int32, closed bool) string {
	switch {
	case pid == 0:
		return "its reader was not known"
	case !closed:
		return "its end of the connection is still open"
	}
	return "its reader is gone"
}

// receiverMaxLine is the longest line, newline included, the receiver reads.
const receiverMaxLine = DefaultMaxEventSize

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
// closed, at most StallTimeout.
func (d *drainer) peerClosed(ino uint64) bool {
	deadline := d.clk.Now().Add(d.opts.StallTimeout)
	for {
		d.health.beat() // waiting, by design: not wedged
		gone, err := unixSocketGone(ino)
		if err != nil || gone {
			return err == nil
		}
		if d.clk.Now().After(deadline) || !d.sleep(peerPoll) {
			return false
		}
	}
}
