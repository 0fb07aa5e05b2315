package delivery

import (
	"fmt"
	"time"
)

// Delivery is the drainer's decisions. Its zero value is not usable: New
// makes one.
type Delivery struct {
	cfg Config

	acked     uint64 // highest sequence acknowledged or set aside; only grows
	cursor    uint64 // next sequence to write; 0: from the oldest pending
	isolateTo uint64 // while anything up to it is unhandled, one event a write
	witness   uint64 // newest acknowledged sequence the caller can resend, 0: none
	strikes   Strikes
	suspect   uint64       // written alone once all before it is handled; see isolationHold
	tcp       tcpIsolation // see tcpIsolation
	empty     int          // connections in a row that failed before handling anything
	conn      *connState
	dial      dialPlan // see dialPlan
	idle      idlePlan // see idlePlan

	rd Ready // accumulated since the last Advance
}

// New returns a Delivery with cfg, before any connection.
func New(cfg Config) *Delivery {
	if cfg.CrashPause == 0 {
		cfg.CrashPause = max(cfg.MaxBackoff, crashLoopMaxPause)
	}
	return &Delivery{cfg: cfg, dial: newDialPlan(cfg)}
}

// Step tells delivery what happened; what to do accumulates in Ready. It
// fails only on an Input of no known Kind.
func (d *Delivery) Step(in Input) error {
	switch in.Kind {
	case Restore:
		d.restore(in.Seq, in.Strikes)
	case Connected:
		d.connected(in.Now, in.Reads)
	case First:
		d.skipTo(in.Seq)
	case Next:
		d.skipTo(in.Seq)
		d.rd.Send, d.rd.SendOK = d.next(in.Now)
	case Wrote:
		d.wrote(in.Now, in.Lines, in.N)
	case Read:
		d.observed(in.Now, in.N)
		d.tick(in.Now)
	case Tick:
		d.tick(in.Now)
	case Fin:
		d.peerFin(in.Now, in.N)
	case Failed:
		d.failed(in.Now, in.Cause, in.N)
	case Released:
		d.connLost()
		d.backOff(in.Now, false) // dial at once when there is work
	default:
		return d.stepMore(in)
	}
	d.state(in.Now)
	return nil
}

// stepMore is Step for the inputs that change no connection.
func (d *Delivery) stepMore(in Input) error {
	switch in.Kind {
	case DialFailed:
		d.connLost()
		d.dialFailed(in.Now)
	case Appeared:
		d.appeared(in.Now)
	case SetAside:
		d.setAsideDone(in.Seq)
	case Rewind:
		d.cursor = 0
	case NoWitness:
		d.witness = 0
	case Park:
		d.park(in.Idle)
	case Recheck:
		d.recheck(in.Idle)
	default:
		return fmt.Errorf("delivery: input of unknown kind %d", in.Kind)
	}
	d.state(in.Now)
	return nil
}

// restore takes the spool's oldest pending sequence (with none, the next
// one) and saved strikes. Their witness, kept with or without a suspect,
// counts only if it comes just before the oldest: else it proves nothing
// about it.
func (d *Delivery) restore(oldest uint64, s Strikes) {
	if oldest > 0 {
		d.acked = oldest - 1
	}
	if s.Witness != 0 && s.Witness+1 == oldest {
		d.witness = s.Witness
	}
	if s.Seq >= oldest && s.N > 0 {
		d.strikes = s
		d.isolateTo = max(d.isolateTo, s.Seq)
		if d.kernelReads() { // on a Unix socket the next hang-up names the suspect again
			d.suspect = s.Seq
		}
	}
}

func (d *Delivery) connected(now time.Time, reads bool) {
	d.conn = &connState{start: now, lastMove: now, reads: reads}
	d.cursor = 0
	d.dial.quick = false
}

// Hold judges a hold of the live gate that has lasted held (MaxHold):
// release it, or look again after left (0: no limit).
func (d *Delivery) Hold(held time.Duration) (release bool, left time.Duration) {
	if d.cfg.MaxHold <= 0 {
		return false, 0
	}
	if held >= d.cfg.MaxHold {
		return true, 0
	}
	return false, d.cfg.MaxHold - held
}

// skipTo records that the spool's oldest pending event is first: what came
// before left it another way (the full-spool policy, expiry).
func (d *Delivery) skipTo(first uint64) {
	if first > d.acked+1 {
		d.acked = first - 1
		if d.conn != nil {
			d.conn.dropThrough(d.acked)
		}
		d.clearStrikes(d.acked)
	}
}

// Aged applies MaxAge to a batch just read from first on, given each
// line's age: keep the first keep lines, or expire the first expire and read
// again. The expired lines at the
// spool's head (after acked) are expired and the spool read again; otherwise
// the batch is cut before its first expired line, which waits for its turn
// (an earlier boot's events, aged on the wall clock, may expire out of
// order). Expired lines behind unacknowledged ones wait until they reach the
// head: expiring them would remove those too.
func (d *Delivery) Aged(first uint64, ages []time.Duration) (keep, expire int) {
	old := 0
	for d.cfg.MaxAge > 0 && old < len(ages) && ages[old] > d.cfg.MaxAge {
		old++
	}
	switch {
	case old > 0 && first > d.acked+1:
		return 0, 0
	case old > 0:
		return 0, old
	}
	for i, a := range ages {
		if d.cfg.MaxAge > 0 && a > d.cfg.MaxAge {
			return i, 0
		}
	}
	return len(ages), 0
}
