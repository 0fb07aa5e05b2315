// Package verify checks what a receiver got against what was sent, by
// evspool's delivery promise: everything arrives, in order, and a duplicate
// is only ever part of a contiguous run replayed after a failure. `evspool
// demo` prints its Result; the tests and the bench check with it.
package verify

import "fmt"

// Result is the outcome of Check.
type Result struct {
	Sent       int // events sent
	Received   int // lines received, duplicates included
	Missing    int // sent events never received
	Duplicates int // lines received more than once (beyond the first)
	Reordered  int // lines that skipped ahead of an event not yet received
	// Interleaved counts lines that skipped ahead of the replay in
	// progress to an event after every earlier one had been received: a
	// receiver handling the end of an old connection beside a resend on a
	// new one. It is counted in Reordered too.
	Interleaved int
	Foreign     int // lines that were never sent
	FirstError  string
}

// OK reports whether the delivery kept the promise: nothing missing, nothing
// out of order, nothing foreign.
func (r Result) OK() bool { return r.Missing == 0 && r.Reordered == 0 && r.Foreign == 0 }

// InOrder reports whether nothing is missing or foreign and every event
// first arrived after all events sent before it: OK, except that a replay
// may be interleaved with lines after it (Interleaved).
func (r Result) InOrder() bool {
	return r.Missing == 0 && r.Reordered == r.Interleaved && r.Foreign == 0
}

func (r Result) String() string {
	return fmt.Sprintf("sent %d, received %d: %d missing, %d duplicates, %d out of order (%d interleaved), %d foreign (first problem: %s)",
		r.Sent, r.Received, r.Missing, r.Duplicates, r.Reordered, r.Interleaved, r.Foreign, r.FirstError)
}

// Check compares got with sent, whose lines must be unique. The allowed moves
// from one received line to the next are: the next event sent, or back to any
// earlier event (a replay starting). Anything that jumps ahead is reordering.
func Check(sent, got []string) Result {
	index := make(map[string]int, len(sent))
	for i, s := range sent {
		index[s] = i
	}
	r := Result{Sent: len(sent), Received: len(got)}
	seen := make([]bool, len(sent))
	pos, prefix := -1, 0 // prefix: every event before it was received
	for n, line := range got {
		i, ok := index[line]
		switch {
		case !ok:
			r.Foreign++
			r.note("line %d (%q) was never sent", n, line)
			continue
		case seen[i]:
			r.Duplicates++
		}
		if i > pos+1 {
			r.Reordered++
			if i <= prefix {
				r.Interleaved++
			}
			r.note("line %d is event %d but event %d was expected next", n, i, pos+1)
		}
		seen[i] = true
		pos = i
		for prefix < len(seen) && seen[prefix] {
			prefix++
		}
	}
	for i, s := range seen {
		if !s {
			r.Missing++
			r.note("event %d (%q) never arrived", i, sent[i])
		}
	}
	return r
}

func (r *Result) note(format string, args ...any) {
	if r.FirstError == "" {
		r.FirstError = fmt.Sprintf(format, args...)
	}
}
