package delivery_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/evspool/evspool/internal/delivery"
)

// simReceiver is a sequential reader on one connection, as cloud-event-proxy
// is: read up to 4 KiB, handle every complete line read, read again. Each
// write is one kernel buffer costing its payload plus overhead, freed once
// read whole, which SIOCOUTQ reports.
type simReceiver struct {
	writes   []simWrite // not yet read whole
	lines    []simLine  // written, in order
	consumed uint64     // bytes read
	handled  int        // lines handled (a prefix of lines)
}

type simWrite struct {
	end  uint64
	mem  int
	left int // bytes not yet read
}

type simLine struct {
	seq uint64
	end uint64
}

const simOverhead = 700

func (s *simReceiver) outq() int {
	n := 0
	for _, w := range s.writes {
		n += w.mem
	}
	return n
}

// handleBuffered handles the complete lines read so far, the first poison
// one excepted: it reports false if it died on it.
func (s *simReceiver) handleBuffered(poison uint64, handledSeqs map[uint64]bool, upTo int) bool {
	for s.handled < len(s.lines) && s.lines[s.handled].end <= s.consumed && s.handled < upTo {
		l := s.lines[s.handled]
		if l.seq == poison {
			return false
		}
		handledSeqs[l.seq] = true
		s.handled++
	}
	return true
}

func (s *simReceiver) read(n int) {
	for n > 0 && len(s.writes) > 0 {
		w := &s.writes[0]
		take := min(n, w.left)
		w.left -= take
		n -= take
		s.consumed += uint64(take)
		if w.left == 0 {
			s.writes = s.writes[1:]
		}
	}
}

// TestDeliveryProperties drives delivery against simulated sequential
// receivers that read at random sizes, die at random (or on a poison event),
// and checks the invariants: acknowledgements only move forward and never
// pass an event the receiver has not handled; a new connection resends from
// the oldest unacknowledged event; only the oldest event is set aside, never
// one the receiver handled; no strike without the line before it handled on
// the same connection. "Never one the receiver handled" holds as long as the
// receiver, while evspool isolates a few events after a failure, dies only
// of the event it was given: a healthy receiver killed three times, each
// time right after reading the same event alone, is indistinguishable from
// that event's poison.
func TestDeliveryProperties(t *testing.T) {
	var acks, asides, struck int
	defer func() { t.Logf("acknowledgements %d, set aside %d, strikes %d", acks, asides, struck) }()
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig(delivery.LastRead)
		cfg.Linger = 0 // reads alone prove anything
		cfg.Batch = rapid.IntRange(1, 20).Draw(rt, "batch")
		d := newRig(rt, cfg)
		d.restore(1, delivery.Strikes{})
		total := uint64(rapid.IntRange(1, 60).Draw(rt, "events"))
		sizes := map[uint64]int{}
		for s := uint64(1); s <= total; s++ {
			sizes[s] = rapid.IntRange(10, 900).Draw(rt, "size")
		}
		poison := uint64(rapid.IntRange(0, int(total)).Draw(rt, "poison"))
		exact := rapid.Bool().Draw(rt, "exact memory")
		handled := map[uint64]bool{}
		setAside := map[uint64]bool{}
		var rcv *simReceiver
		now := 0
		check := func(r delivery.Ready, before uint64) {
			if r.AckThrough != 0 {
				if r.AckThrough <= before {
					rt.Fatalf("acknowledgement went back: %d after %d", r.AckThrough, before)
				}
				for s := before + 1; s <= r.AckThrough; s++ {
					if !handled[s] && !setAside[s] {
						rt.Fatalf("acknowledged %d, never handled", s)
					}
				}
			}
			if r.SetAside != 0 {
				if r.SetAside != r.Acked+1 {
					rt.Fatalf("set aside %d, oldest pending %d", r.SetAside, r.Acked+1)
				}
				if handled[r.SetAside] {
					rt.Fatalf("set aside %d, which the receiver handled", r.SetAside)
				}
				setAside[r.SetAside] = true
				d.setAside(r.SetAside)
			}
			if r.Drop != delivery.DropNone {
				rcv = nil
			}
		}
		for step := 0; step < 1500 && d.rd.Acked < total; step++ {
			now += rapid.IntRange(1, 5000).Draw(rt, "ms")
			if rcv == nil || !d.rd.Connected {
				rcv = &simReceiver{}
				d.connected(now)
				continue
			}
			before, strikes := d.rd.Acked, d.rd.Strikes
			var r delivery.Ready
			switch [...]int{0, 0, 0, 1, 1, 1, 2, 3, 4, 4}[rapid.IntRange(0, 9).Draw(rt, "action")] {
			case 0: // write what delivery asks for
				p, ok := d.next(now)
				if !ok {
					continue
				}
				var ls []delivery.Line
				if p.ResendWitness != 0 {
					ls = append(ls, delivery.Line{Seq: p.ResendWitness, Size: sizes[p.ResendWitness]})
				}
				from := max(p.From, d.rd.Acked+1)
				if p.ResendWitness == 0 && len(rcv.lines) == 0 && from != d.rd.Acked+1 {
					rt.Fatalf("a new connection starts at %d, not at the oldest pending %d", from, d.rd.Acked+1)
				}
				for s := from; p.ResendWitness == 0 && s <= total && s < from+uint64(p.Max); s++ {
					ls = append(ls, delivery.Line{Seq: s, Size: sizes[s]})
				}
				if len(ls) == 0 {
					continue
				}
				payload := 0
				for _, l := range ls {
					payload += l.Size
					end := uint64(l.Size)
					if n := len(rcv.lines); n > 0 {
						end += rcv.lines[n-1].end
					}
					rcv.lines = append(rcv.lines, simLine{l.Seq, end})
				}
				mem := 0
				if exact {
					mem = payload + simOverhead
				}
				rcv.writes = append(rcv.writes, simWrite{end: rcv.lines[len(rcv.lines)-1].end, mem: payload + simOverhead, left: payload})
				d.wrote(now, ls, mem)
			case 1: // the receiver handles what it read, then reads again
				if !rcv.handleBuffered(poison, handled, len(rcv.lines)) {
					r = d.hungUp(now, len(rcv.writes) > 0)
					rcv = nil
					break
				}
				rcv.read(rapid.IntRange(1, 4096).Draw(rt, "read"))
				r = d.read(now, rcv.outq())
			case 2: // SIOCOUTQ
				r = d.read(now, rcv.outq())
			case 3: // it dies, having handled part of what it read
				if d.rd.Isolating {
					// A kill of a healthy receiver in the middle of an
					// isolation, right after it read an event alone,
					// looks exactly like that event's poison: the model
					// leaves it out (see the invariant below).
					continue
				}
				rcv.handleBuffered(poison, handled, rapid.IntRange(0, len(rcv.lines)).Draw(rt, "handled before dying"))
				r = d.hungUp(now, len(rcv.writes) > 0)
				rcv = nil
			case 4:
				r = d.tick(now)
			}
			check(r, before)
			if r.AckThrough != 0 {
				acks++
			}
			if r.SetAside != 0 {
				asides++
			}
			if d.rd.Strikes.N > strikes.N {
				struck++
			}
			if d.rd.Strikes.N > strikes.N || (d.rd.Strikes.Seq != strikes.Seq && d.rd.Strikes.N > 0) {
				if !handled[d.rd.Strikes.Seq-1] && d.rd.Strikes.Seq > 1 {
					rt.Fatalf("strike on %d with %d never handled", d.rd.Strikes.Seq, d.rd.Strikes.Seq-1)
				}
				if d.rd.Strikes.Seq == 1 {
					rt.Fatalf("strike on 1: nothing before it was handled")
				}
			}
		}
	})
}
