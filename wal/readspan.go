package wal

import "sync"

// An Ack usually removes a prefix of what the last Read returned, or of what
// the last commits stored (an event sent without a Read). Read keeps what it
// saw of each value it walked, and a commit adds the values it put when they
// follow on (readSpans), so that such an Ack counts what it removes without a
// read transaction of its own. Values are immutable once committed, and a
// prefix leaves only by a removal, so the spans stay true until a removal
// other than Ack (a drop, an expiry) or a new file (salvage, compaction,
// heal) forgets them (forgetSpans).

// readSpan is what Read saw of one value.
type readSpan struct {
	first uint64 // the value's first sequence
	n     int    // its events
	cost  int64  // value.cost
	at    int64  // its stamp's wall clock
	from  uint64 // the first event sizes has
	sizes []int  // the sizes of its events from from on
}

func (s *readSpan) last() uint64 { return s.first + uint64(s.n) - 1 }

// readSpans are the spans of the last Read, in order, and whether the walk
// went past the last of them (so the value after the last span is known:
// there is one, in spans, or the walk ended at the queue's end, unknown).
type readSpans struct {
	mu    sync.Mutex
	spans []readSpan
	gen   uint64 // forgetSpans calls; a Read that began before one keeps nothing
}

// keep records the spans of a Read that began at generation gen.
func (r *readSpans) keep(gen uint64, spans []readSpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen == r.gen {
		r.spans = spans
	}
}

// maxSpanEvents bounds the events the spans hold sizes of: while nothing is
// acknowledged (the receiver away) commits stop adding to them.
const maxSpanEvents = 4096

// extend adds the spans of the values a commit put, if they follow the last
// span kept (or none is kept) and the spans stay within maxSpanEvents. The
// caller holds wmu, so no other commit or removal runs meanwhile.
func (r *readSpans) extend(puts []readSpan) {
	if len(puts) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.spans) == 0 {
		r.spans = puts
		return
	}
	if r.spans[len(r.spans)-1].last()+1 != puts[0].first {
		return
	}
	n := 0
	for _, s := range r.spans {
		n += len(s.sizes)
	}
	for _, s := range puts {
		n += len(s.sizes)
	}
	if n <= maxSpanEvents {
		r.spans = append(r.spans, puts...)
	}
}

// forget drops the spans: the values they describe may be gone.
func (r *readSpans) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans, r.gen = nil, r.gen+1
}

// generation returns the current generation, for keep.
func (r *readSpans) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// remove is state.remove (with need 0) from the spans: it hides the pending
// events through upTo and reports false, changing nothing, when the spans
// do not cover them and the value after upTo's.
func (r *readSpans) remove(st *state, upTo uint64) (Counter, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone Counter
	work := *st
	from, upTo := work.removeStart(upTo)
	i := 0
	for i < len(r.spans) && r.spans[i].last() < from {
		i++
	}
	if i == len(r.spans) || r.spans[i].first > from || r.spans[i].from > from {
		return gone, false
	}
	for ; ; i++ {
		if i == len(r.spans) {
			if upTo == work.meta.nextSeq-1 && r.spans[i-1].last() == upTo {
				break // the queue ends with upTo: nothing after it
			}
			return Counter{}, false // the value after upTo's was not seen
		}
		s := &r.spans[i]
		for seq := max(from, s.first); seq <= min(upTo, s.last()); seq++ {
			if seq-s.from >= uint64(len(s.sizes)) {
				return Counter{}, false // not returned by that Read
			}
			gone.add(Counter{1, uint64(s.sizes[seq-s.from])})
		}
		if work.removeValue(prefixValue{s.first, s.last(), s.cost, s.at}, upTo) {
			break
		}
	}
	work.removeEnd(gone, upTo)
	*st = work
	r.spans = r.spans[i:] // the values before the new head are gone
	return gone, true
}
