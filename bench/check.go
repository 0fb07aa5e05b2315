package main

import (
	"slices"
	"sort"
)

// span is a run of sequence numbers one producer process handed over:
// [base, end).
type span struct{ base, end uint64 }

// delivery is what the receiver got compared with what was handed over.
type delivery struct {
	Sent, Received, Delivered int64
	Lost                      int64 // handed over, never received
	Duplicates                int64 // received again after the first time
	OutOfOrder                int64 // first arrivals after a later event had arrived
	Jumps                     int64 // internal/verify's Reordered: arrivals that skip ahead of an event not yet received
	Foreign                   int64 // lines not handed over (or not ours)
	latencies                 []int64
}

// check applies internal/verify's rule per producer, without holding every
// line as a string: sent events are indexed 0..n-1 in the order a producer
// handed them over; from one received line to the next the allowed moves are
// the next index or back to any earlier one (a replay). A move ahead is a
// Jump (verify's Reordered), which a lost event also causes, so OutOfOrder
// counts the plain sense too: a first arrival after a later event. Both are
// zero for an ordered, at-least-once delivery. check_test.go compares check
// with verify.Check. It also collects the emit-to-received latency of every
// first arrival.
func check(sent map[int][]span, arr []arrival) delivery {
	var d delivery
	st := map[int]*prodState{}
	for p, spans := range sent {
		st[p] = newProdState(spans)
		d.Sent += int64(st[p].n)
	}
	d.latencies = make([]int64, 0, len(arr))
	for _, a := range arr {
		d.Received++
		ps := st[int(a.prod)]
		i, ok := -1, false
		if ps != nil {
			i, ok = ps.index(a.seq)
		}
		if !ok {
			d.Foreign++
			continue
		}
		if ps.seen[i] {
			d.Duplicates++
		} else {
			if i < ps.maxSeen {
				d.OutOfOrder++
			}
			d.latencies = append(d.latencies, a.atNs-a.emitNs)
			d.Delivered++
		}
		if i > ps.pos+1 {
			d.Jumps++
		}
		ps.seen[i] = true
		ps.pos, ps.maxSeen = i, max(ps.maxSeen, i)
	}
	d.Lost = d.Sent - d.Delivered
	return d
}

// prodState is one producer's progress through check.
type prodState struct {
	spans   []span
	offs    []int // index of each span's first event
	n       int
	seen    []bool
	pos     int
	maxSeen int
}

func newProdState(spans []span) *prodState {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b span) int { return cmpU64(a.base, b.base) })
	ps := &prodState{spans: spans, pos: -1, maxSeen: -1}
	for _, s := range spans {
		ps.offs = append(ps.offs, ps.n)
		ps.n += int(s.end - s.base)
	}
	ps.seen = make([]bool, ps.n)
	return ps
}

func (ps *prodState) index(seq uint64) (int, bool) {
	k := sort.Search(len(ps.spans), func(i int) bool { return ps.spans[i].end > seq })
	if k == len(ps.spans) || seq < ps.spans[k].base {
		return 0, false
	}
	return ps.offs[k] + int(seq-ps.spans[k].base), true
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// extendSpans widens each span to the highest sequence that arrived in its
// generation: events a killed producer committed but had not reported yet
// were handed over all the same (one producer hands over in order).
func extendSpans(sent map[int][]span, arr []arrival) {
	for _, a := range arr {
		spans := sent[int(a.prod)]
		for k := range spans {
			s := &spans[k]
			if a.seq >= s.base && a.seq < s.base+genStride && a.seq >= s.end {
				s.end = a.seq + 1
			}
		}
	}
}
