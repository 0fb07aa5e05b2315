package wal

import (
	"fmt"
	"strings"
)

// SalvageReport tells what was done about a damaged spool file.
type SalvageReport struct {
	Cause       error  // the damage that was found
	CorruptPath string // where the damaged file is kept for inspection
	Recovered   uint64 // pending entries copied into the fresh spool
	FirstSeq    uint64 // oldest recovered sequence number, 0 if none
	LastSeq     uint64 // newest recovered sequence number, 0 if none
	// Missing counts the pending events not recovered (added to
	// Stats.Unreadable), as far as the surviving meta copies tell.
	Missing uint64
	// Unreadable lists the Missing sequence numbers as ranges, oldest
	// first: at most maxGaps, the last running to the newest missing.
	Unreadable []SeqRange
	// RemovedCopies lists older damaged copies removed to bound them.
	RemovedCopies []string
}

// SeqRange is the sequence numbers First to Last, both included.
type SeqRange struct{ First, Last uint64 }

func (g SeqRange) String() string {
	if g.First == g.Last {
		return fmt.Sprint(g.First)
	}
	return fmt.Sprintf("%d-%d", g.First, g.Last)
}

// UnreadableSeqs is Unreadable as text, "25 40-59", for a log line.
func (r *SalvageReport) UnreadableSeqs() string {
	s := make([]string, len(r.Unreadable))
	for i, g := range r.Unreadable {
		s[i] = g.String()
	}
	return strings.Join(s, " ")
}

func (r *SalvageReport) String() string {
	s := fmt.Sprintf("damaged spool file kept as %s; %d pending events recovered (sequences %d to %d, %d unreadable); cause: %v",
		r.CorruptPath, r.Recovered, r.FirstSeq, r.LastSeq, r.Missing, r.Cause)
	if len(r.Unreadable) > 0 {
		s += fmt.Sprintf("; unreadable sequences: %s", r.UnreadableSeqs())
	}
	if len(r.RemovedCopies) > 0 {
		s += fmt.Sprintf("; older damaged copies removed: %s", strings.Join(r.RemovedCopies, ", "))
	}
	return s
}

// maxGaps bounds SalvageReport.Unreadable.
const maxGaps = 16

// gaps returns the numbers in [lo, hi) not in seen, as ranges.
func gaps(seen map[uint64]struct{}, lo, hi uint64) []SeqRange {
	var out []SeqRange
	for seq := lo; seq < hi; seq++ {
		if _, ok := seen[seq]; ok {
			continue
		}
		if n := len(out); n > 0 && (out[n-1].Last == seq-1 || n == maxGaps) {
			out[n-1].Last = seq
			continue
		}
		out = append(out, SeqRange{seq, seq})
	}
	return out
}
