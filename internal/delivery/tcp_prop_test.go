package delivery_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/evspool/evspool/internal/delivery"
)

// tcpSim is a sequential reader behind TCP: its kernel takes every write at
// once (SIOCOUTQ 0); it reads up to 4 KiB of what its kernel holds, handles
// every complete line read (dying on the poison one), and reads again. A
// receiver connected ReplayLinger after its kernel took a line has handled
// it (the linger rule's premise): time never passes that point otherwise.
// It dies with nothing unread in its kernel: a FIN; else a reset.
type tcpSim struct {
	lines    []simLine
	takenAt  []int  // ms
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
		cfg := testConfig(delivery.KernelTook)
		cfg.Batch = rapid.IntRange(1, 20).Draw(rt, "batch")
		linger := int(cfg.Linger / time.Millisecond)
		d := newRig(rt, cfg)
		d.restore(1, delivery.Strikes{})
		total := uint64(rapid.IntRange(1, 40).Draw(rt, "events"))
		poison := uint64(rapid.IntRange(0, int(total)).Draw(rt, "poison"))
		crashes := rapid.IntRange(0, 4).Draw(rt, "crash loop")
		handled, setAside := map[uint64]bool{}, map[uint64]bool{}
		var rcv *tcpSim
		now := 0
		// advance moves time on by ms; the receiver first handles what
		// would otherwise linger unhandled.
		advance := func(ms int) {
			now += ms
			if rcv == nil || rcv.dead {
				return
			}
			for i := rcv.handled; i < len(rcv.lines); i++ {
				if now-rcv.takenAt[i] >= linger {
					rcv.readHandle(int(rcv.written), poison, handled)
					return
				}
			}
		}
		check := func(r delivery.Ready, before uint64) {
			for s := before + 1; r.AckThrough != 0 && s <= r.AckThrough; s++ {
				if !handled[s] && !setAside[s] {
					rt.Fatalf("acknowledged %d, never handled", s)
				}
			}
			if r.SetAside != 0 {
				if r.SetAside != poison || r.SetAside != r.Acked+1 {
					rt.Fatalf("set aside %d: poison %d, oldest pending %d", r.SetAside, poison, r.Acked+1)
				}
				setAside[r.SetAside] = true
				d.setAside(r.SetAside)
				asides++
			}
			if r.AckThrough != 0 {
				acks++
			}
		}
		for step := 0; step < 2000 && d.rd.Acked < total; step++ {
			if rcv == nil {
				advance(rapid.IntRange(1, 100).Draw(rt, "dial ms"))
				rcv = &tcpSim{crashing: crashes > 0}
				crashes--
				d.connected(now)
				continue
			}
			before, strikes := d.rd.Acked, d.rd.Strikes
			var r delivery.Ready
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 0: // write what delivery asks for
				p, ok := d.next(now)
				if !ok || rcv.dead {
					continue
				}
				var ls []delivery.Line
				if p.ResendWitness != 0 {
					ls = append(ls, delivery.Line{Seq: p.ResendWitness, Size: 100})
				}
				from := max(p.From, d.rd.Acked+1)
				for s := from; p.ResendWitness == 0 && s <= total && s < from+uint64(p.Max); s++ {
					ls = append(ls, delivery.Line{Seq: s, Size: 100})
				}
				if len(ls) == 0 {
					continue
				}
				for _, l := range ls {
					rcv.written += uint64(l.Size)
					rcv.lines = append(rcv.lines, simLine{l.Seq, rcv.written})
					rcv.takenAt = append(rcv.takenAt, now)
				}
				d.wrote(now, ls, 0)
				r = d.read(now, 0)
			case 1: // it reads and handles
				if !rcv.dead {
					rcv.readHandle(rapid.IntRange(1, 4096).Draw(rt, "read"), poison, handled)
				}
				continue
			case 2, 3: // time passes; the drainer checks the socket
				advance([]int{rapid.IntRange(1, 30).Draw(rt, "ms"), linger}[rapid.IntRange(0, 1).Draw(rt, "long")])
				switch {
				case rcv.dead && rcv.consumed == rcv.written && d.rd.WantsFin && d.fin(now, 0):
					r = d.hungUp(now, true)
					rcv = nil
				case rcv.dead:
					r = d.hungUp(now, true)
					rcv = nil
				default:
					r = d.read(now, 0)
					r2 := d.tick(now)
					check(r, before)
					before, r = d.rd.Acked, r2
				}
			case 4: // killed, outside isolation, having handled part of what it read
				if d.rd.Isolating || rcv.dead {
					continue
				}
				rcv.readHandle(rapid.IntRange(0, 4096).Draw(rt, "read before dying"), poison, handled)
				rcv.dead = true
				continue
			}
			check(r, before)
			if d.rd.Strikes.N > strikes.N || (d.rd.Strikes.Seq != strikes.Seq && d.rd.Strikes.N > 0) {
				struck++
				if d.rd.Strikes.Seq != poison {
					rt.Fatalf("strike on %d, poison %d", d.rd.Strikes.Seq, poison)
				}
			}
		}
	})
}
