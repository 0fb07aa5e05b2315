// Package verify checks what a receiver got against what was sent, by
// evspool's delivery promise: everything arrives, in order, and a duplicate
// is only ever part of a contiguous run replayed after a failure.
package verify

import "fmt"

// Result is the outcome of Check.
type Result struct {
	Sent       int // events sent
	Received   int // lines received, duplicates included
	Missing    int // sent events never received
	Duplicates int // lines received more than once (beyond the first)
	Reordered  int // lines that skipped ahead of an event not yet received
	Foreign    int // lines that were never sent
	FirstError string
}

// OK reports whether the delivery kept the promise: nothing missing, nothing
// out of order, nothing foreign.
func (r Result) OK() bool { return r.Missing == 0 && r.Reordered == 0 && r.Foreign == 0 }

func (r Result) String() string {
	return fmt.Sprintf("sent %d, received %d: %d missing, %d duplicates, %d out of order, %d foreign (first problem: %s)",
		r.Sent, r.Received, r.Missing, r.Duplicates, r.Reordered, r.Foreign, r.FirstError)
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
	pos := -1
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
			r.note("line %d is event %d but event %d was expected next", n, i, pos+1)
		}
		seen[i] = true
		pos = i
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
