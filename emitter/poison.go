package emitter

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/wal"
)

// poison isolates an event after which the receiver keeps failing (it hangs
// up, or stops reading), and sets it aside in the dead-letter file so that
// delivery goes on.
//
// After a connection fails with events read but not known handled, or
// written but not read, the next connection resends them one event at a
// time (isolateTo marks the last of them). One at a time, the receiver reads
// an event only after handling the one before, so when it hangs up again the
// culprit is the oldest event not known handled: the one it read last, or,
// if that one has since left the replay window, the one being written. When
// it stalls instead (alive, but reading no more: cloud-event-proxy after a
// line too long for its scanner), the culprit is the one being written; a
// receiver stuck for good on the event it read last is therefore blamed on
// the next one (a limit: it would be set aside in the wrong place). Each
// such failure is a strike against the culprit; MaxAttempts strikes in a row
// set it aside. A cloud-event-proxy that re-executes itself on a line thus
// restarts once in batch mode and MaxAttempts times in isolation: 4 with the
// default of 3.
type poison struct {
	isolateTo   uint64 // while the cursor is at or below it, one event a write
	written     uint64 // the highest sequence written on this connection
	inflight    uint64 // the first sequence of the write not yet read, or 0
	isolated    bool   // the last write on this connection was one event, isolating
	suspect     uint64
	strikes     int
	sinceUpdate time.Time
}

// isolating reports whether the next write carries one event only: while
// the cursor is within what a failure left unproven, and until the last of
// those is known handled (the event written after it, alone, is read).
func (d *drainer) isolating() bool {
	p := &d.poison
	if p.isolateTo == 0 {
		return false
	}
	oldest := d.win.oldest()
	return d.cursor == 0 || d.cursor <= p.isolateTo || (oldest != 0 && oldest <= p.isolateTo)
}

// blame is called when a connection failed (stalled: the receiver stopped
// reading but is there): it picks the culprit, counts a strike when the
// connection was isolating, sets the culprit aside after MaxAttempts
// strikes, and makes the next connection isolate what this one left
// unproven.
func (d *drainer) blame(stalled bool) {
	p := &d.poison
	culprit := d.win.oldest()
	if culprit == 0 || (stalled && p.inflight != 0) {
		culprit = p.inflight
	}
	if culprit == 0 {
		return // the receiver had handled everything: not its fault
	}
	if p.isolated {
		if culprit == p.suspect {
			p.strikes++
		} else {
			p.suspect, p.strikes = culprit, 1
		}
		if p.strikes >= d.opts.MaxAttempts {
			d.deadLetter(culprit, p.strikes)
		}
	}
	p.isolateTo = max(p.isolateTo, p.written)
}

// deadLetter moves the event seq, the oldest pending one, to the dead-letter
// file, then removes it from the spool. A crash in between leaves it in both:
// a duplicate in the file, never a loss.
func (d *drainer) deadLetter(seq uint64, attempts int) {
	if first := d.spool.FirstSeq(); first != seq {
		// Only the oldest event can be removed alone; the ones before it
		// have not left the replay window (never expected, see stallLimit).
		d.dlWarn.log(d.opts.Logger, "cannot set a poison event aside yet: older events are not known handled",
			"seq", seq, "oldest_pending_seq", first)
		return
	}
	entries, err := d.spool.Read(seq, 1, 0)
	if err != nil || len(entries) == 0 || entries[0].Seq != seq {
		d.opts.Logger.Error("cannot read a poison event to set it aside", "seq", seq, "error", err)
		return
	}
	e := entries[0]
	dl := wal.DeadLetter{Seq: seq, Appended: e.Time, At: time.Now(), Attempts: attempts, Data: e.Data}
	path := filepath.Join(d.spool.Dir(), wal.DeadLetterFile)
	if err := wal.AppendDeadLetter(d.spool.Dir(), dl, d.opts.MaxDeadLetterBytes); err != nil {
		d.dlWarn.log(d.opts.Logger, "cannot set a poison event aside; it stays spooled and is retried",
			"seq", seq, "file", path, "error", err.Error())
		return
	}
	if err := d.spool.Ack(seq); err != nil {
		d.opts.Logger.Error("poison event set aside but not removed from the spool; it will be set aside again",
			"seq", seq, "error", err)
		return
	}
	d.poison.suspect, d.poison.strikes = 0, 0
	d.opts.Logger.Error("event set aside in the dead-letter file: the receiver failed on it repeatedly",
		"seq", seq, "attempts", attempts, "bytes", len(e.Data), "first_bytes", fmt.Sprintf("%.80q", e.Data),
		"file", path, "hint", "list with 'evspool inspect --spool DIR --dead-letters'; re-inject with '--dead-letters --raw | evspool run ...'")
	d.mu.Lock()
	d.link.deadLettered++
	d.signalProgress()
	d.mu.Unlock()
}
