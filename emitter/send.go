package emitter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal"
)

// avgEventGuess turns a batch's event count into its byte bound.
const avgEventGuess = 256

// sendBatch writes what delivery asks for next and waits until the receiver
// has read it. It returns how many events were written, or expired instead.
func (d *drainer) sendBatch() (int, error) {
	r, _ := d.step(msg{kind: msgNext, seq: d.spool.FirstSeq()})
	p := r.send
	var entries []wal.Entry
	var err error
	switch {
	case !r.sendOK:
		return 0, nil
	case p.resendWitness != 0 && d.w.witness.Seq != p.resendWitness:
		d.step(msg{kind: msgNoWitness}) // not at hand: go on without it
		return 0, nil
	case p.resendWitness != 0:
		entries = []wal.Entry{d.w.witness}
	default:
		entries, err = d.spool.Read(p.from, p.max, min(p.max*avgEventGuess, d.opts.BatchBytes))
		d.noteRead(entries) // see notifyFor
		if errors.Is(err, wal.ErrCorrupt) {
			d.repair(err)
			return 0, nil
		}
		var expired int
		if err == nil && d.opts.MaxAge > 0 && len(entries) > 0 {
			entries, expired, err = d.aged(entries)
		}
		if expired > 0 || err != nil || len(entries) == 0 {
			return expired, err
		}
	}
	if err := d.write(entries); err != nil {
		return 0, err
	}
	if d.opts.AckOnWrite || !d.w.waiter.Supported() {
		_, err := d.step(msg{kind: msgRead})
		return len(entries), err
	}
	if err := d.waitRead(); err != nil {
		return 0, err
	}
	d.logs.out.up(d.spool.Len) // it reads: any outage is over
	return len(entries), nil
}

// writeChunk bounds one write(2). A Unix socket frees a write's buffer only
// once it is read whole, so SIOCOUTQ shows reads a write at a time; half a
// cloud-event-proxy read (4 KiB) keeps the replay window near one read.
const writeChunk = 2 << 10

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
		if err := d.writeChunk(buf[:end], entries[:n]); err != nil {
			return err
		}
		buf, entries = buf[end:], entries[n:]
	}
	return nil
}

// writeChunk writes one chunk, retrying while the receiver is there but not
// reading (a stall, not a failure: delivery judges it where reads can be
// seen), and tells delivery what it wrote.
func (d *drainer) writeChunk(chunk []byte, entries []wal.Entry) error {
	for {
		err := d.awaitRoom(len(chunk)) // whole or nothing: see the note after awaitRoom
		n, before := 0, 0
		if err == nil {
			n, before, err = d.gatedWrite(chunk)
		}
		if n == len(chunk) {
			d.noteWrite(entries, before)
			return nil
		}
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || d.ctx.Err() != nil || !d.w.waiter.Supported() {
			return fmt.Errorf("write to %s: %w", d.addr, err) // n > 0: torn, cannot go on
		}
		if err := d.check(); err != nil {
			return err
		}
	}
}

// noteWrite tells delivery about a write; before is SIOCOUTQ just before it, so
// the growth never overestimates the write's memory.
func (d *drainer) noteWrite(entries []wal.Entry, before int) {
	mem := 0
	after, ok := d.unread()
	if ok {
		mem = after - before
	}
	d.w.room.queued, d.w.room.ok = after, ok && d.w.unix && d.w.room.sndbuf > 0
	lines := make([]line, len(entries))
	for i, e := range entries {
		lines[i] = line{seq: e.Seq, size: len(e.Data) + 1}
		if e.Seq > d.view.acked {
			d.w.sent = append(d.w.sent, e)
		}
	}
	d.step(msg{kind: msgWrote, lines: lines, n: mem})
	d.notePeer(lines[len(lines)-1].seq)
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
	if gone != nil { // a dying peer's queue reads as 0: report the check before
		return fmt.Errorf("%w with %d bytes unread at the last check before; resending from the oldest event not known handled",
			gone, max(d.view.unread, unread))
	}
	if d.view.wantsFin {
		// Before anything lingers: a FIN means it stopped reading.
		fin, err := d.w.waiter.PeerClosedWrite()
		if err == nil && fin {
			if r, _ := d.step(msg{kind: msgFin, n: unread}); r.closed {
				return errPeerClosed
			}
		}
	}
	d.w.room.queued = unread
	_, err = d.step(msg{kind: msgRead, n: unread})
	d.seekReader() // once a connection, after its first read: see peer.go
	return err
}

// chunkEnd returns how much of buf the next write takes: up to writeChunk
// bytes ending at a newline, or one whole longer line.
func chunkEnd(buf []byte) int {
	if len(buf) <= writeChunk {
		return len(buf)
	}
	if i := bytes.LastIndexByte(buf[:writeChunk], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(buf[writeChunk:], '\n'); i >= 0 {
		return writeChunk + i + 1
	}
	return len(buf)
}

// waitRead polls until the receiver has read everything written or the
// connection fails, as often as delivery says (view.poll).
func (d *drainer) waitRead() error {
	return d.poll(sockwait.DefaultMinInterval, func() (time.Duration, error) {
		d.pub.health.beat()
		if err := d.check(); err != nil || !d.view.reading {
			return 0, err
		}
		return d.view.poll, nil
	})
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
	d.step(msg{kind: msgRewind})
	logSalvage(d.opts.Logger, r)
	d.unreadableLogged()
}

// gatedWrite writes one chunk through the gate and returns SIOCOUTQ just
// before it (see noteWrite): a fresh reading, not the room's upper bound,
// lets delivery see this write read as soon as it is. The deadline is set
// before the context is checked: a Close before it is seen here, one after
// it sets its past deadline over ours.
func (d *drainer) gatedWrite(chunk []byte) (n, before int, err error) {
	if err := d.enterGate(); err != nil {
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

// aged steps delivery with a batch's ages (Options.MaxAge) and carries out
// what it says: write part of the batch, or expire its head and return how
// many were expired (the caller reads again).
func (d *drainer) aged(entries []wal.Entry) ([]wal.Entry, int, error) {
	now, boot := d.opts.Clock.Now(), d.opts.Clock.Boot()
	ls, ages := make([]line, len(entries)), make([]time.Duration, len(entries))
	for i, e := range entries {
		ls[i], ages[i] = line{seq: e.Seq, size: len(e.Data) + 1}, e.Age(now, boot)
	}
	r, _ := d.step(msg{kind: msgBatch, lines: ls, ages: ages, seq: d.spool.FirstSeq()})
	if r.expire == 0 {
		return entries[:r.keep], 0, nil
	}
	gone, err := d.spool.Expire(r.expire)
	if err != nil {
		return nil, 0, err
	}
	d.step(msg{kind: msgFirst, seq: r.expire + 1})
	d.logs.expiredHere.Add(gone.Events)
	d.logExpired(gone, false)
	d.progressed(func(*linkStats) {})
	n := 0
	for n < len(entries) && entries[n].Seq <= r.expire {
		n++
	}
	return nil, n, nil
}

// awaitRoom waits until the send buffer can take n bytes whole. It returns
// nil when it can (or when that cannot be known), an error matching
// os.ErrDeadlineExceeded after WriteTimeout, or the context's error at Close.
// A chunk larger than the buffer can ever take first raises SO_SNDBUF, then
// waits for an empty queue, and can still be torn. Where sendRoom already
// proves the room it takes no reading, sparing the cores commits need.
func (d *drainer) awaitRoom(n int) error {
	need := n + n/8 + 4096
	if r := d.w.room; !d.w.waiter.Supported() || r.ok && r.queued+need <= r.sndbuf {
		return nil
	}
	start, raised := d.opts.Clock.Now(), false
	return d.poll(sockwait.DefaultMinInterval, func() (time.Duration, error) {
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
		waited := d.opts.Clock.Now().Sub(start)
		if waited > d.opts.WriteTimeout {
			return 0, fmt.Errorf("no room in the send buffer for %d bytes: %w", n, os.ErrDeadlineExceeded)
		}
		return pollAfter(waited), nil
	})
}

// An abandoned write must not leave the receiver part of a line: a scanner
// hands a partial last line to its handler at EOF. So each chunk ends at a
// line's end and is written only once the send buffer can take it whole
// (with the kernel's per-buffer overhead), so that write(2) copies all of it
// or, past its deadline, nothing.
