package emitter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// avgEventGuess turns a batch's event count into its byte bound.
const avgEventGuess = 256

// sendBatch writes what delivery asks for next and waits until the receiver
// has read it. It returns how many events were written, or expired instead.
func (d *drainer) sendBatch() (int, error) {
	d.step(delivery.Input{Kind: delivery.Next, Seq: d.spool.FirstSeq()})
	p := d.rd.Send
	var entries []wal.Entry
	var err error
	switch {
	case !d.rd.SendOK:
		return 0, nil
	case p.ResendWitness != 0 && (d.w.witness.Seq != p.ResendWitness || d.stateNewer(d.w.witness)):
		// Not at hand, or it would take its key back: go on without it
		// (delivery asks for it no more).
		d.step(delivery.Input{Kind: delivery.NoWitness})
		return d.sendBatch()
	case p.ResendWitness != 0:
		entries = []wal.Entry{d.w.witness}
	default:
		entries, err = d.readNext(p)
		d.noteRead(entries) // see notifyFor
		if errors.Is(err, wal.ErrCorrupt) {
			d.repair(err)
			return 0, nil
		}
		var expired int
		if err == nil && d.opts.MaxAge > 0 && len(entries) > 0 {
			entries, expired, err = d.applyAge(entries)
		}
		if expired > 0 || err != nil || len(entries) == 0 {
			return expired, err
		}
		if err := d.writeGapState(entries[0].Seq); err != nil {
			return 0, err
		}
	}
	if err := d.write(entries); err != nil {
		return 0, err
	}
	if d.opts.AckOnWrite || !d.w.waiter.Supported() {
		return len(entries), d.step(delivery.Input{Kind: delivery.Read})
	}
	if err := d.waitRead(true); err != nil {
		return 0, err
	}
	d.logs.out.up(d.spool.Len) // it reads: any outage is over
	return len(entries), nil
}

// readNext reads what delivery asks for from the spool.
func (d *drainer) readNext(p delivery.Send) ([]wal.Entry, error) {
	return d.spool.Read(p.From, p.Max, min(p.Max*avgEventGuess, d.opts.BatchBytes))
}

// write writes entries in chunks that end at a line's end, so that an
// evspool dying between two writes leaves no torn line.
func (d *drainer) write(entries []wal.Entry) error {
	buf := d.w.buf[:0]
	for _, e := range entries {
		buf = append(append(buf, e.Data...), '\n')
	}
	if cap(buf) <= 2*d.opts.BatchBytes {
		d.w.buf = buf
	}
	for len(buf) > 0 {
		d.pub.health.beat()
		end := chunkEnd(buf)
		n := bytes.Count(buf[:end], []byte{'\n'})
		if err := d.writeChunk(buf[:end], entries[:n], end == len(buf), false); err != nil {
			return err
		}
		buf, entries = buf[end:], entries[n:]
	}
	return nil
}

// writeChunk writes one chunk, retrying while the receiver is there but not
// reading (a stall, not a failure: delivery judges it where reads can be
// seen), and tells delivery what it wrote. It is the one write path: an
// Emit caller sending inline (inline.go) passes inline and waits for
// nothing; where the drainer would wait (the in-flight window, room in the
// send buffer, a shut gate or a due preamble, a write past its deadline) it
// returns errWouldWait having written nothing, and the drainer writes it.
func (d *drainer) writeChunk(chunk []byte, entries []wal.Entry, last, inline bool) error {
	if err := d.awaitWindow(len(chunk), !last, inline); err != nil {
		return err
	}
	way := gateEvents
	if inline {
		way = gateInline
	}
	for {
		err := d.awaitRoom(len(chunk), inline) // whole or nothing: see the note after awaitRoom
		n, before := 0, 0
		if err == nil {
			n, before, err = d.gatedWrite(chunk, way)
		}
		if n == len(chunk) {
			return d.noteWrite(entries, before, len(chunk), last, inline)
		}
		if n == 0 && errors.Is(err, errWouldWait) {
			return err
		}
		if n == 0 && errors.Is(err, errPreambleDue) {
			if inline {
				return errWouldWait
			}
			if err := d.passGate(false); err != nil {
				return err // the connection was dropped (passGate)
			}
			continue
		}
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || d.ctx.Err() != nil || !d.w.waiter.Supported() {
			return fmt.Errorf("write to %s: %w", d.addr, err) // n > 0: torn, cannot go on
		}
		if inline {
			return errWouldWait // nothing written: the drainer writes it
		}
		if err := d.check(); err != nil {
			return err
		}
	}
}

// errWouldWait is an inline write that met a wait: nothing was written.
var errWouldWait = errors.New("the write would wait: the drainer writes it")

// noteWrite tells delivery about a write of payload bytes and, if last
// (after a batch's last chunk, not inline), what the socket shows right
// after it (the first look for the read). before is SIOCOUTQ just before
// the write, so the growth never overestimates the write's memory: a read
// in between only lowers it. An inline write leaves the look to the next
// send or the drainer, the receiver having rarely read it yet; alone in a
// queue the look before found empty it takes no reading: delivery takes the
// payload for its memory (mem 0), less than it is, which can only delay
// seeing it read, and the room takes a bound above it until the next look.
func (d *drainer) noteWrite(entries []wal.Entry, before, payload int, last, inline bool) error {
	if inline && d.w.room.queued == 0 {
		d.w.room.queued = 2*payload + 4096
		return d.step(delivery.Input{Kind: delivery.Wrote, Lines: d.sentLines(entries)})
	}
	look := last && !inline
	mem, unread, gone, err := 0, 0, (*sockwait.PeerGoneError)(nil), error(nil)
	switch {
	case d.w.waiter == nil || !d.w.waiter.Supported():
		err = errors.ErrUnsupported
		d.w.room.ok = false
	default:
		if look {
			unread, gone, err = d.w.waiter.Probe()
		} else {
			unread, err = d.w.waiter.Unread()
		}
		if err == nil {
			mem = unread - before
		}
		d.w.room.queued, d.w.room.ok = unread, err == nil && d.w.unix && d.w.room.sndbuf > 0
	}
	d.step(delivery.Input{Kind: delivery.Wrote, Lines: d.sentLines(entries), N: mem})
	if !look || err != nil || d.opts.AckOnWrite {
		return nil // no look now; an error shows at the next one
	}
	return d.probed(unread, gone)
}

// sentLines keeps the entries written for a resend of the witness and
// returns them as delivery counts them, in a slice reused by the next call.
func (d *drainer) sentLines(entries []wal.Entry) []delivery.Line {
	lines := d.w.lines[:0]
	for _, e := range entries {
		lines = append(lines, delivery.Line{Seq: e.Seq, Size: len(e.Data) + 1})
		d.w.wroteTo = max(d.w.wroteTo, e.Seq)
		if e.Seq > d.rd.Acked {
			d.w.sent = append(d.w.sent, e)
		}
	}
	d.w.lines = lines
	d.w.wroteAt = d.opts.Clock.Now()
	return lines
}

// unread is SIOCOUTQ, when it can be read.
func (d *drainer) unread() (int, bool) {
	if d.w.waiter == nil || !d.w.waiter.Supported() {
		return 0, false
	}
	n, err := d.w.waiter.Unread()
	return n, err == nil
}

// check reads SIOCOUTQ, polls for a hang-up and steps delivery with both.
func (d *drainer) check() error {
	unread, gone, err := d.w.waiter.Probe()
	if err != nil {
		return err
	}
	return d.probed(unread, gone)
}

// probed steps delivery with a probe of the socket: unread bytes, or the
// receiver gone.
func (d *drainer) probed(unread int, gone *sockwait.PeerGoneError) error {
	if gone != nil && !errors.Is(gone.Cause, syscall.ECONNRESET) && d.w.in.resetSeen(resetWait) {
		gone.Cause = syscall.ECONNRESET // the reader's read took it from the socket
	}
	if gone != nil { // a dying peer's queue reads as 0: report the check before
		return fmt.Errorf("%w with %d bytes unread at the last check before; resending from the oldest event not known handled",
			gone, max(d.rd.Unread, unread))
	}
	if d.rd.WantsFin {
		// Before anything lingers: a FIN means it stopped reading.
		fin, err := d.w.waiter.PeerClosedWrite()
		if err == nil && fin {
			if err := d.step(delivery.Input{Kind: delivery.Fin, N: unread}); errors.Is(err, errPeerClosed) {
				return err
			}
		}
	}
	d.w.room.queued = unread
	return d.step(delivery.Input{Kind: delivery.Read, N: unread})
}

// chunkEnd returns how much of buf the next write takes: up to
// delivery.ChunkBytes ending at a newline, or one whole longer line.
func chunkEnd(buf []byte) int {
	const chunk = delivery.ChunkBytes
	if len(buf) <= chunk {
		return len(buf)
	}
	if i := bytes.LastIndexByte(buf[:chunk], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(buf[chunk:], '\n'); i >= 0 {
		return chunk + i + 1
	}
	return len(buf)
}

// waitRead waits until the receiver has read everything written or the
// connection fails. looked says the socket was just looked at (the look
// after a write).
func (d *drainer) waitRead(looked bool) error {
	if !looked {
		if err := d.check(); err != nil {
			return err
		}
	}
	return d.awaitReads(0, func() bool { return !d.rd.Reading })
}

// awaitReadMax bounds a wait in real time for a read (awaitReads): a
// receiver that reads does within it; one that does not is looked at on
// the emitter's clock.
const awaitReadMax = 2 * time.Millisecond

// awaitWindow waits until n more bytes fit delivery's in-flight window
// (State.Fits; more: further chunks of the batch follow); inline, it
// returns errWouldWait instead of waiting.
func (d *drainer) awaitWindow(n int, more, inline bool) error {
	if !d.w.unix || d.w.waiter == nil || !d.w.waiter.Supported() || d.opts.AckOnWrite || d.rd.Fits(n, more) {
		return nil
	}
	if inline {
		return errWouldWait
	}
	return d.awaitReads(delivery.Spins(more), func() bool { return d.rd.InFlight == 0 })
}

// awaitReads looks at the socket until done holds or the connection fails.
// On a Unix socket it first waits up to awaitReadMax for the receiver to
// read (sockwait's AwaitRead: woken by the read itself); a receiver that
// reads nothing in that time, and any other socket, is looked at again
// after delivery's pause (Ready.Poll) on the clock.
func (d *drainer) awaitReads(spins int, done func() bool) error {
	if !d.w.unix {
		return d.poll(func() (time.Duration, error) {
			d.pub.health.beat()
			if done() {
				return 0, nil
			}
			if err := d.check(); err != nil || done() {
				return 0, err
			}
			return d.rd.Poll, nil
		})
	}
	for !done() {
		d.pub.health.beat()
		if err := d.ctx.Err(); err != nil {
			return err
		}
		last := d.rd.Unread
		unread, err := d.w.waiter.AwaitRead(d.w.conn, awaitReadMax, spins, func(unread int) bool { return unread < last })
		if err != nil {
			return err
		}
		if unread >= last && !d.sleep(d.rd.Poll) {
			return d.ctx.Err()
		}
		if err := d.check(); err != nil {
			return err
		}
	}
	return nil
}

// repair salvages a spool whose records turned out damaged while draining.
func (d *drainer) repair(cause error) {
	r, err := d.spool.Repair(cause)
	if err != nil {
		d.opts.Logger.Error("spool damaged and could not be salvaged", "error", err)
		d.sleep(time.Second)
		return
	}
	if r == nil {
		// A read fault, not damage: wal reopened the file and logged it.
		return
	}
	d.step(delivery.Input{Kind: delivery.Rewind})
	logSalvage(d.opts.Logger, r)
	d.loss.Logged(ledger.Unreadable) // the salvage's line reported them
	d.progressed(func(*linkStats) {})
}

// gatedWrite writes one chunk through the gate (enterGate, the way given:
// events, inline or raw) and returns SIOCOUTQ just before it (see
// noteWrite): a fresh reading, not the room's upper bound, lets delivery
// see this write read as soon as it is. The deadline is set before the context is checked: a
// Close before it is seen here, one after it sets its past deadline over
// ours.
func (d *drainer) gatedWrite(chunk []byte, way gateWay) (n, before int, err error) {
	if err := d.enterGate(way); err != nil {
		return 0, 0, err
	}
	defer d.leaveGate()
	if err := sockwait.ArmWrite(d.w.conn, d.opts.WriteTimeout); err != nil {
		return 0, 0, err
	}
	if err := d.ctx.Err(); err != nil {
		return 0, 0, err
	}
	if r := d.w.room; !r.ok || r.queued > 0 {
		before, _ = d.unread() // else nothing is unread: only this drainer writes
	}
	n, err = d.w.conn.Write(chunk)
	return n, before, err
}

// applyAge steps delivery with a batch's ages (Options.MaxAge) and carries out
// what it says: write part of the batch, or expire its head and return how
// many were expired (the caller reads again).
func (d *drainer) applyAge(entries []wal.Entry) ([]wal.Entry, int, error) {
	now, boot := d.opts.Clock.Now(), d.opts.Clock.Boot()
	ages := d.w.ages[:0]
	for _, e := range entries {
		ages = append(ages, e.Age(now, boot))
	}
	d.w.ages = ages
	keep, expire := d.dv.Aged(entries[0].Seq, ages)
	if expire == 0 {
		return entries[:keep], 0, nil
	}
	through := entries[expire-1].Seq
	// Counted before the spool lets them go, as ack counts.
	d.loss.Note(ledger.Expired, uint64(expire))
	gone, err := d.spool.Expire(through)
	if err != nil {
		d.loss.Undo(ledger.Expired, uint64(expire)) // expired again, and counted then
		return nil, 0, err
	}
	if gone.Events > uint64(expire) {
		d.loss.Note(ledger.Expired, gone.Events-uint64(expire))
	}
	d.step(delivery.Input{Kind: delivery.First, Seq: through + 1})
	d.progressed(func(*linkStats) {})
	return nil, expire, nil
}

// awaitRoom waits until the send buffer can take n bytes whole. It returns
// nil when it can (or when that cannot be known), an error matching
// os.ErrDeadlineExceeded when delivery gives up (NoRoom), or the context's
// error at Close; inline, errWouldWait where room is not already proven.
// A chunk larger than the buffer can ever take first raises SO_SNDBUF, then
// waits for an empty queue, and can still be torn. Where sendRoom already
// proves the room it takes no reading, sparing the cores commits need.
func (d *drainer) awaitRoom(n int, inline bool) error {
	need := roomNeed(n)
	if r := d.w.room; !d.w.waiter.Supported() || r.ok && r.queued+need <= r.sndbuf {
		return nil
	}
	if inline {
		return errWouldWait
	}
	start, raised := d.opts.Clock.Now(), false
	return d.poll(func() (time.Duration, error) {
		sndbuf, queued, err := d.w.waiter.SendMem(0)
		d.w.room.readings++
		if err == nil && need > sndbuf && !raised {
			raised = true // once: then wait for an empty queue
			sndbuf, queued, err = d.w.waiter.SendMem(need)
			d.w.room.readings++
		}
		if err != nil {
			return 0, nil // cannot tell: write as before
		}
		if sndbuf-queued >= need || (need > sndbuf && queued == 0) {
			d.w.room.sndbuf = sndbuf
			return 0, nil
		}
		look, timedOut := d.dv.Room(d.opts.Clock.Now(), start)
		if timedOut {
			return 0, fmt.Errorf("no room in the send buffer for %d bytes: %w", n, os.ErrDeadlineExceeded)
		}
		return look, nil
	})
}

// roomNeed is what the send buffer must have free to take n bytes whole,
// with the kernel's per-buffer overhead.
func roomNeed(n int) int { return n + n/8 + 4096 }

// An abandoned write must not leave the receiver part of a line: a scanner
// hands a partial last line to its handler at EOF. So each chunk ends at a
// line's end and is written only once the send buffer can take it whole
// (with the kernel's per-buffer overhead), so that write(2) copies all of it
// or, past its deadline, nothing.
