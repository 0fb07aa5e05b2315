package demo

import (
	"fmt"
	"io"
	"time"

	"github.com/evspool/evspool/internal/verify"
)

// Side is what one sender's receiver got.
type Side struct {
	Received   int  // lines received, duplicates included
	Unique     int  // distinct events received
	Lost       int  // events produced and never received
	Duplicates int  // lines received more than once (beyond the first)
	InOrder    bool // nothing arrived ahead of an event not yet received
}

// Summary is the outcome of a demo run.
type Summary struct {
	Took            time.Duration // from the first event produced to the end
	Produced        int           // events produced, each handed to both senders
	ReceiverCrashes int           // times both receivers were killed
	EmitterKills    int           // times the evspool child was SIGKILLed
	Evspool         Side          // through the spool
	ReconnectOnly   Side          // through the reconnect-only sender
	Replays         []Replay      // where evspool's duplicates came from
}

// OK reports whether evspool kept its promise: nothing lost, in order.
func (s *Summary) OK() bool { return s.Evspool.Lost == 0 && s.Evspool.InOrder }

func (d *demo) summarize(took time.Duration) *Summary {
	got := d.rcvA.Lines()
	res := verify.Check(d.produced, got)
	return &Summary{
		Replays: replays(d.faultMarks, got),
		Took:    took, Produced: len(d.produced), ReceiverCrashes: d.crashes, EmitterKills: d.kills,
		Evspool: Side{
			Received: res.Received, Unique: res.Received - res.Duplicates - res.Foreign,
			Lost: res.Missing, Duplicates: res.Duplicates, InOrder: res.Reordered == 0 && res.Foreign == 0,
		},
		ReconnectOnly: sideWithGaps(d.produced, d.rcvB.Lines()),
	}
}

// sideWithGaps counts what arrived of sent when gaps are expected: in order
// means every line comes after the one before it in sent.
func sideWithGaps(sent, got []string) Side {
	index := make(map[string]int, len(sent))
	for i, l := range sent {
		index[l] = i
	}
	s := Side{Received: len(got), InOrder: true}
	seen := make(map[int]bool, len(got))
	last := -1
	for _, l := range got {
		i, ok := index[l]
		switch {
		case !ok:
			s.InOrder = false
			continue
		case seen[i]:
			s.Duplicates++
			continue
		}
		if i < last {
			s.InOrder = false
		}
		seen[i], last = true, i
	}
	s.Unique = len(seen)
	s.Lost = len(sent) - s.Unique
	return s
}

// Print writes the summary table and its verdict.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "\nSummary: %d events in %.1fs; the receiver crashed %d times, evspool was SIGKILLed %d times\n\n",
		s.Produced, s.Took.Seconds(), s.ReceiverCrashes, s.EmitterKills)
	row := func(name string, a, b any) { fmt.Fprintf(w, "  %-26s %10v %16v\n", name, a, b) }
	row("", "evspool", "reconnect-only")
	row("events produced", s.Produced, s.Produced)
	row("events received", s.Evspool.Unique, s.ReconnectOnly.Unique)
	row("lost", s.Evspool.Lost, s.ReconnectOnly.Lost)
	row("delivered twice (replay)", s.Evspool.Duplicates, s.ReconnectOnly.Duplicates)
	row("in order", yes(s.Evspool.InOrder), yes(s.ReconnectOnly.InOrder))
	fmt.Fprintln(w)
	if s.OK() {
		fmt.Fprintf(w, "evspool lost nothing: all %d events arrived, in order.\n", s.Produced)
	} else {
		fmt.Fprintf(w, "evspool FAILED: %d events lost, in order: %s.\n", s.Evspool.Lost, yes(s.Evspool.InOrder))
	}
	fmt.Fprintf(w, "The reconnect-only sender, under the same faults, lost %d events (%.1f%%).\n\n",
		s.ReconnectOnly.Lost, 100*float64(s.ReconnectOnly.Lost)/float64(max(s.Produced, 1)))
	s.printReplays(w)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}
