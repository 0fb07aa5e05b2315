package emitter

import (
	"errors"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// window is the replay window: events the receiver has read (SIOCOUTQ says
// so) but may not have handled yet. cloud-event-proxy reads ahead into a
// bufio.Scanner (4 KiB, up to 64 KiB for long lines) and handles one line at
// a time, so a read event is only known handled once the receiver has read
// ReplayWindow bytes after it (its scanner cannot hold both), or once it has
// stayed connected ReplayLinger after reading it. Until then the event stays
// in the spool: if the receiver hangs up, it is resent, with everything after
// it, as one contiguous in-order replay. While isolating a poison event, one
// event is written at a time, so the receiver reading the next one proves it
// handled the one before.
type window struct {
	entries []winEntry // oldest first
	read    uint64     // bytes read by the receiver on this connection
}

type winEntry struct {
	seq   uint64
	alone bool      // written alone, after everything before it was read
	end   uint64    // window.read when the receiver had read this line
	at    time.Time // when that was seen
}

// reset forgets the window: a new connection resends it from the spool.
func (w *window) reset() { w.entries, w.read = w.entries[:0], 0 }

// add records that the receiver read entries, in order, at now; alone says
// they were one event written after everything before it was read.
func (w *window) add(entries []wal.Entry, now time.Time, alone bool) {
	for _, e := range entries {
		w.read += uint64(len(e.Data)) + 1
		w.entries = append(w.entries, winEntry{seq: e.Seq, end: w.read, at: now, alone: alone && len(entries) == 1})
	}
}

// due returns how many of the oldest entries have left the window at now:
// proven of them because the receiver has read at least bytes after them
// (or anything after them, for one written alone: it read on only after
// handling it), which holds even if it hung up since; all of them counting
// also those read at least linger ago, which holds only if the receiver is
// still there.
func (w *window) due(now time.Time, bytes uint64, linger time.Duration) (proven, all int) {
	for i, e := range w.entries {
		last := i == len(w.entries)-1
		switch {
		case (e.alone && !last) || w.read-e.end >= bytes:
			proven, all = i+1, i+1
			continue
		case now.Sub(e.at) >= linger:
			all = i + 1
			continue
		}
		break
	}
	return proven, all
}

// drop removes the n oldest entries and returns the last one removed.
func (w *window) drop(n int) winEntry {
	last := w.entries[n-1]
	w.entries = append(w.entries[:0], w.entries[n:]...)
	return last
}

// next returns when the oldest entry leaves the window by time.
func (w *window) next(linger time.Duration) (time.Time, bool) {
	if len(w.entries) == 0 {
		return time.Time{}, false
	}
	return w.entries[0].at.Add(linger), true
}

// oldest returns the oldest entry's sequence number, 0 if none.
func (w *window) oldest() uint64 {
	if len(w.entries) == 0 {
		return 0
	}
	return w.entries[0].seq
}

// errReadThenGone marks a hang-up after the receiver had read the whole write.
var errReadThenGone = errors.New("receiver read everything, then hung up")

// readThenGone records that the receiver read entries before it hung up: they
// join the replay window (resent all the same), and what they prove handled
// (while isolating, the event before them) leaves it, so that the culprit is
// the newest.
func (d *drainer) readThenGone(entries []wal.Entry) {
	d.poison.inflight = 0
	d.win.add(entries, time.Now(), d.poison.isolated)
	proven, _ := d.win.due(time.Now(), uint64(d.opts.ReplayWindow), d.opts.ReplayLinger)
	if proven > 0 {
		_ = d.ack(proven) // if it fails, they are resent: duplicates
	}
}

// expire acknowledges the events that have left the replay window. Those that
// left it by time only are acknowledged once it has made sure the receiver is
// still there (one that hung up may not have handled them: they are resent).
func (d *drainer) expire() error {
	proven, all := d.win.due(time.Now(), uint64(d.opts.ReplayWindow), d.opts.ReplayLinger)
	if proven > 0 {
		if err := d.ack(proven); err != nil {
			return err
		}
	}
	if all == proven {
		return nil
	}
	if d.waiter != nil && d.waiter.Supported() {
		if gone, err := d.waiter.HungUp(); gone || err != nil {
			return errors.Join(sockwait.ErrPeerGone, err)
		}
	}
	return d.ack(all - proven)
}

// ack removes the n oldest events of the window from the spool.
func (d *drainer) ack(n int) error {
	e := d.win.drop(n)
	if err := d.spool.Ack(e.seq); err != nil {
		return err
	}
	if d.poison.suspect != 0 && d.poison.suspect <= e.seq {
		d.poison.suspect, d.poison.strikes = 0, 0 // it was handled after all
	}
	d.mu.Lock()
	d.link.delivered += uint64(n)
	d.signalProgress()
	d.mu.Unlock()
	return nil
}

// signalProgress wakes Flush; d.mu must be held.
func (d *drainer) signalProgress() {
	close(d.progress)
	d.progress = make(chan struct{})
}
