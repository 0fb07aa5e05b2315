package emitter

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// tcpSim is a sequential reader behind TCP: its kernel takes every write at
// once (SIOCOUTQ 0); it reads up to 4 KiB of what its kernel holds, handles
// every complete line read (dying on the poison one), and reads again. A
// receiver connected ReplayLinger after its kernel took a line has handled
// it (the linger rule's premise): time never passes that point otherwise.
// It dies with nothing unread in its kernel: a FIN; else a reset.
type tcpSim struct {
	lines    []simLine
	takenAt  []time.Time
	consumed uint64 // bytes read from its kernel
	handled  int    // lines handled (a prefix)
	written  uint64
	dead     bool
	crashing bool // dies handling the first line it reads, whatever it is
}

// readHandle reads up to n bytes and handles the complete lines read; it
// reports false if it died.
func (s *tcpSim) readHandle(n int, poison uint64, handled map[uint64]bool) bool {
	s.consumed = min(s.consumed+uint64(n), s.written)
	for s.handled < len(s.lines) && s.lines[s.handled].end <= s.consumed {
		if s.lines[s.handled].seq == poison || s.crashing {
			s.dead = true
			return false
		}
		handled[s.lines[s.handled].seq] = true
		s.handled++
	}
	return true
}

// TestDeliveryTCPProperties drives delivery over TCP (kernelTook) against
// simulated receivers that die on a poison event, on whatever they read
// first (a crash loop, its first few connections), or, outside isolation,
// at random, and checks: acknowledgements never pass an event not handled;
// only the poison event is set aside or struck (a healthy receiver killed
// while evspool isolates is left out, as in TestDeliveryProperties).
func TestDeliveryTCPProperties(t *testing.T) {
	var acks, asides, struck int
	defer func() { t.Logf("acknowledgements %d, set aside %d, strikes %d", acks, asides, struck) }()
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig(kernelTook)
		cfg.batch = rapid.IntRange(1, 20).Draw(rt, "batch")
		d := newDelivery(cfg)
		d.restore(1, strikeRecord{})
		total := uint64(rapid.IntRange(1, 40).Draw(rt, "events"))
		poison := uint64(rapid.IntRange(0, int(total)).Draw(rt, "poison"))
		crashes := rapid.IntRange(0, 4).Draw(rt, "crash loop")
		handled, setAside := map[uint64]bool{}, map[uint64]bool{}
		var rcv *tcpSim
		now := t0
		// advance moves time on by ms; the receiver first handles what
		// would otherwise linger unhandled.
		advance := func(ms int) {
			now = now.Add(time.Duration(ms) * time.Millisecond)
			if rcv == nil || rcv.dead {
				return
			}
			for i := rcv.handled; i < len(rcv.lines); i++ {
				if now.Sub(rcv.takenAt[i]) >= cfg.linger {
					rcv.readHandle(int(rcv.written), poison, handled)
					return
				}
			}
		}
		check := func(r ready, before uint64) {
			for s := before + 1; r.ackThrough != 0 && s <= r.ackThrough; s++ {
				if !handled[s] && !setAside[s] {
					rt.Fatalf("acknowledged %d, never handled", s)
				}
			}
			if r.setAside != 0 {
				if r.setAside != poison || r.setAside != d.acked+1 {
					rt.Fatalf("set aside %d: poison %d, oldest pending %d", r.setAside, poison, d.acked+1)
				}
				setAside[r.setAside] = true
				d.setAsideDone(r.setAside)
				asides++
			}
			if r.ackThrough != 0 {
				acks++
			}
		}
		for step := 0; step < 2000 && d.acked < total; step++ {
			if rcv == nil {
				advance(rapid.IntRange(1, 100).Draw(rt, "dial ms"))
				rcv = &tcpSim{crashing: crashes > 0}
				crashes--
				d.connected(now)
				continue
			}
			before, strikes := d.acked, d.strikes
			var r ready
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 0: // write what delivery asks for
				p, ok := d.next(now)
				if !ok || rcv.dead {
					continue
				}
				var ls []line
				if p.resendWitness != 0 {
					ls = append(ls, line{p.resendWitness, 100})
				}
				from := max(p.from, d.acked+1)
				for s := from; p.resendWitness == 0 && s <= total && s < from+uint64(p.max); s++ {
					ls = append(ls, line{s, 100})
				}
				if len(ls) == 0 {
					continue
				}
				for _, l := range ls {
					rcv.written += uint64(l.size)
					rcv.lines = append(rcv.lines, simLine{l.seq, rcv.written})
					rcv.takenAt = append(rcv.takenAt, now)
				}
				d.wrote(now, ls, 0)
				r = d.observed(now, 0)
			case 1: // it reads and handles
				if !rcv.dead {
					rcv.readHandle(rapid.IntRange(1, 4096).Draw(rt, "read"), poison, handled)
				}
				continue
			case 2, 3: // time passes; the drainer checks the socket
				advance([]int{rapid.IntRange(1, 30).Draw(rt, "ms"), int(cfg.linger / time.Millisecond)}[rapid.IntRange(0, 1).Draw(rt, "long")])
				switch {
				case rcv.dead && rcv.consumed == rcv.written && d.wantsFin() && d.peerFin(now, 0):
					r = d.hungUp(now, true)
					rcv = nil
				case rcv.dead:
					r = d.hungUp(now, true)
					rcv = nil
				default:
					r = d.observed(now, 0)
					r2 := d.tick(now)
					check(r, before)
					before, r = d.acked, r2
				}
			case 4: // killed, outside isolation, having handled part of what it read
				if d.isolating() || rcv.dead {
					continue
				}
				rcv.readHandle(rapid.IntRange(0, 4096).Draw(rt, "read before dying"), poison, handled)
				rcv.dead = true
				continue
			}
			check(r, before)
			if d.strikes.n > strikes.n || (d.strikes.seq != strikes.seq && d.strikes.n > 0) {
				struck++
				if d.strikes.seq != poison {
					rt.Fatalf("strike on %d, poison %d", d.strikes.seq, poison)
				}
			}
		}
	})
}
