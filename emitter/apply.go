package emitter

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// apply carries out what delivery decided. It returns errAbandoned when
// delivery dropped the connection, or the spool's error.
func (d *drainer) apply(r ready) error {
	var err error
	if r.ackThrough != 0 {
		err = d.ack(r.ackThrough)
	}
	if r.setAside != 0 {
		d.deadLetter(r.setAside)
	}
	if r.saveStrike {
		d.saveStrikes()
	}
	for _, n := range r.notes {
		d.logNote(n)
	}
	if r.abandon {
		return errAbandoned
	}
	return err
}

// ack removes the events through seq from the spool; the newest is kept as
// the witness.
func (d *drainer) ack(seq uint64) error {
	if err := d.spool.Ack(seq); err != nil {
		return err // they are resent: duplicates
	}
	n := 0
	for n < len(d.held.sent) && d.held.sent[n].Seq <= seq {
		n++
	}
	if n > 0 {
		d.held.witness = d.held.sent[n-1]
		d.held.sent = append(d.held.sent[:0], d.held.sent[n:]...)
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

// deadLetter appends the oldest pending event seq to the dead-letter file,
// then removes it from the spool: a crash in between duplicates, never loses.
func (d *drainer) deadLetter(seq uint64) {
	entries, err := d.spool.Read(seq, 1, 0)
	if err != nil || len(entries) == 0 || entries[0].Seq != seq {
		d.opts.Logger.Error("cannot read a poison event to set it aside", "seq", seq, "error", err)
		return
	}
	e := entries[0]
	attempts := d.view.strikes.n
	dl := ledger.DeadLetter{Seq: seq, Appended: e.Time, At: d.clk.Now(), Attempts: attempts, Data: e.Data}
	path := filepath.Join(d.spool.Dir(), ledger.DeadLetterFile)
	if err := ledger.AppendDeadLetter(d.spool.Dir(), dl, d.opts.MaxDeadLetterBytes); err != nil {
		d.warns.deadLetter.warn(d.opts.Logger, "cannot set a poison event aside; it stays spooled and is retried",
			"seq", seq, "file", path, "error", err.Error())
		return
	}
	if err := d.spool.Ack(seq); err != nil {
		d.opts.Logger.Error("poison event set aside but not removed from the spool; it will be set aside again",
			"seq", seq, "error", err)
		return
	}
	d.step(msg{kind: msgSetAside, seq: seq})
	d.opts.Logger.Error("event set aside in the dead-letter file: the receiver failed on it repeatedly",
		"seq", seq, "attempts", attempts, "bytes", len(e.Data), "first_bytes", fmt.Sprintf("%.80q", e.Data),
		"file", path, "hint", "list with 'evspool inspect --spool DIR --dead-letters'; re-inject with '--dead-letters --raw | evspool run ...'")
	d.mu.Lock()
	d.link.deadLettered++
	d.signalProgress()
	d.mu.Unlock()
}

// saveStrikes keeps delivery's strike record, and the witness, in the spool.
func (d *drainer) saveStrikes() {
	s := d.view.strikes
	rec := ledger.Strikes{Seq: s.seq, Count: s.n}
	if s.seq != 0 && s.witness != 0 && d.held.witness.Seq == s.witness {
		rec.WitnessSeq, rec.Witness = s.witness, d.held.witness.Data
	}
	if err := ledger.SaveStrikes(d.spool, rec); err != nil {
		d.warns.deadLetter.warn(d.opts.Logger, "cannot save a suspect event's strikes; a restart counts them again",
			"seq", s.seq, "error", err.Error())
	}
}

// restoreStrikes takes the strike record an earlier process saved.
func (d *drainer) restoreStrikes() {
	rec, err := ledger.LoadStrikes(d.spool)
	if err != nil {
		d.opts.Logger.Warn("cannot read the suspect event's strikes; counting them again", "error", err.Error())
	}
	d.step(msg{kind: msgRestore, seq: d.spool.FirstSeq(), strikes: strikeRecord{seq: rec.Seq, n: rec.Count, witness: rec.WitnessSeq}})
	if rec.WitnessSeq != 0 {
		d.held.witness = wal.Entry{Seq: rec.WitnessSeq, Data: rec.Witness}
	}
}

// errFrozen is a receiver that reads nothing, connected.
var errFrozen = errors.New("receiver frozen")

// logNote logs what delivery noted, rate-limited.
func (d *drainer) logNote(n note) {
	now := d.clk.Now()
	switch n.kind {
	case noteSlow:
		d.record(func(l *linkStats) { l.stalls++ }, nil)
		d.warns.delivery.warn(d.opts.Logger, "receiver is not reading; keeping the connection", "addr", d.addr,
			"stalled_for", now.Sub(n.since).Round(time.Millisecond).String())
	case noteFrozen:
		d.out.down(fmt.Errorf("%w: read nothing for %v; keeping its connection and writing nothing new until it reads",
			errFrozen, now.Sub(n.since).Round(time.Second)), d.spool.Len, n.since)
	case noteStuck:
		d.opts.Logger.Warn("receiver stopped reading inside an event (a line too long for it?); abandoning the connection",
			"addr", d.addr, "seq", n.seq, "stalled_for", now.Sub(n.since).Round(time.Millisecond).String())
	case noteCrashLoop:
		d.warns.delivery.warn(d.opts.Logger, fmt.Sprintf("receiver crash-looping: failed %d times in a row before handling an event; backing off", n.n),
			"addr", d.addr, "pending_events", d.spool.Len())
	case noteStrike:
		d.opts.Logger.Warn("receiver failed on an event; isolating it", "seq", n.seq, "strikes", n.n,
			"max_attempts", d.opts.MaxAttempts)
	}
}
