package demo

import (
	"fmt"
	"io"
	"strings"
)

// fault is a moment after which evspool may resend: a receiver crash or an
// evspool SIGKILL, with how many lines evspool's receiver had got by then.
type fault struct {
	what     string  // "receiver crash", "evspool SIGKILL"
	at       float64 // seconds since the start
	received int
}

// Replay is the duplicates that arrived after one fault, or after faults
// that came with no delivery in between (a SIGKILL while the receiver was
// down), so resent because of them.
type Replay struct {
	After      string // "the receiver crash at 3.0s and the evspool SIGKILL at 4.0s"
	Duplicates int
}

// markFault records a fault for the duplicates' attribution.
func (d *demo) markFault(what string) {
	d.faultMarks = append(d.faultMarks, fault{what: what, at: d.since(), received: d.rcvA.Count()})
}

// replays attributes each duplicate in got (evspool's receiver's lines, in
// arrival order) to the latest fault before it arrived.
func replays(faults []fault, got []string) []Replay {
	var out []Replay
	group := -1 // index in out of the faults in effect
	next := 0   // next fault to take in
	seen := make(map[string]bool, len(got))
	for i, l := range got {
		for next < len(faults) && faults[next].received <= i {
			f := faults[next]
			desc := fmt.Sprintf("the %s at %.1fs", f.what, f.at)
			if group >= 0 && next > 0 && faults[next-1].received == f.received {
				out[group].After += " and " + desc
			} else {
				out = append(out, Replay{After: desc})
				group = len(out) - 1
			}
			next++
		}
		if seen[l] && group >= 0 {
			out[group].Duplicates++
		}
		seen[l] = true
	}
	kept := out[:0]
	for _, r := range out {
		if r.Duplicates > 0 {
			kept = append(kept, r)
		}
	}
	return kept
}

// printReplays says where the duplicates came from, and why.
func (s *Summary) printReplays(w io.Writer) {
	if s.Evspool.Duplicates == 0 {
		return
	}
	fmt.Fprintf(w, "%d events arrived twice, resent after a fault, as at-least-once allows:\n", s.Evspool.Duplicates)
	for _, r := range s.Replays {
		fmt.Fprintf(w, "  %6d after %s\n", r.Duplicates, r.After)
	}
	fmt.Fprintln(w, strings.TrimSpace(`
After a receiver crash, evspool resends what the receiver may not have handled:
the lines of its last read (it handles every line it read before reading again).
After an evspool SIGKILL, the next start takes nothing the killed one wrote as
handled: it resends what was in flight and the receiver's last read. Either way
a few lines at this rate, at most two 4 KiB reads. See docs/delivery.md,
"The replay window" and "When evspool itself dies".`))
}
