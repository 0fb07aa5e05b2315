package ledger

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/evspool/evspool/wal"
)

// Every loss is reported by some process: the spool counts losses in the
// transaction that loses the events, and the ledger keeps beside each count
// (a spool value) how much of it was logged, so a process killed before it
// logged leaves the difference to the next. Both only grow.

// Kind is a kind of loss the spool counts; Losses is indexed by it.
type Kind int

const (
	DroppedOldest Kind = iota // removed under DropOldest
	DroppedNewest             // refused under DropNewest
	Expired                   // removed by Expire
	Unreadable                // pending when the file was damaged, not recovered by its salvage
	Refused                   // refused before the spool, recorded by wal's CountRefused
	Kinds                     // the number of kinds
)

// Losses are event counts of the losses a spool records, by Kind.
type Losses [Kinds]uint64

// reportedKeys are the spool values of the reported counts, by Kind.
var reportedKeys = [Kinds]string{"reported_dropped_oldest_events", "reported_dropped_newest_events",
	"reported_expired_events", "reported_unreadable_events", "reported_refused_events"}

// markMu orders MarkReported's read, raise and store.
var markMu sync.Mutex

// Reported returns the losses spool counts and how many were reported.
func Reported(spool *wal.WAL) (total, reported Losses) {
	reported, _, _ = loadReported(spool)
	return Totals(spool), reported
}

// Totals are the loss counts of spool.
func Totals(spool *wal.WAL) Losses {
	st := spool.Stats()
	return Losses{st.DroppedOldest.Events, st.DroppedNewest.Events, st.Expired.Events, st.Unreadable, st.Refused}
}

// ReportedKnown tells whether spool records what was reported (an older
// spool does not until the first MarkReported); a spool that lost nothing
// counts as known.
func ReportedKnown(spool *wal.WAL) bool {
	_, known, err := loadReported(spool)
	return err == nil && (known || Totals(spool) == Losses{})
}

// loadReported reads the reported counts; known is false if there are none.
func loadReported(spool *wal.WAL) (r Losses, known bool, err error) {
	for k, key := range reportedKeys {
		v, err := spool.Value(key)
		if err != nil {
			return Losses{}, false, err
		}
		if len(v) == 8 {
			r[k], known = binary.BigEndian.Uint64(v), true
		}
	}
	return r, known, nil
}

// MarkReported records in spool that the losses up to r were reported; the
// counts are only ever raised. It commits only when something changed.
func MarkReported(spool *wal.WAL, r Losses) error {
	markMu.Lock()
	defer markMu.Unlock()
	was, known, err := loadReported(spool)
	if err != nil {
		return err
	}
	values := make(map[string][]byte, len(reportedKeys))
	changed := !known
	for k, n := range r {
		v := max(n, was[k])
		changed = changed || v != was[k]
		values[reportedKeys[k]] = binary.BigEndian.AppendUint64(nil, v)
	}
	if !changed {
		return nil
	}
	if err := spool.SetValues(values); err != nil {
		return fmt.Errorf("ledger: record reported losses: %w", err)
	}
	return nil
}
