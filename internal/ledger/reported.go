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

// Losses are event counts of the losses a spool records.
type Losses struct {
	DroppedOldest uint64 // removed under DropOldest
	DroppedNewest uint64 // refused under DropNewest
	Expired       uint64 // removed by Expire
	Unreadable    uint64 // pending when the file was damaged, not recovered by its salvage
	Refused       uint64 // refused before the spool, recorded by wal's CountRefused
}

// reportedKeys are the spool values of the reported counts, in the order
// of fields.
var reportedKeys = [...]string{"reported_dropped_oldest_events", "reported_dropped_newest_events",
	"reported_expired_events", "reported_unreadable_events", "reported_refused_events"}

// fields are l's counts, in the order of reportedKeys.
func (l *Losses) fields() [len(reportedKeys)]*uint64 {
	return [...]*uint64{&l.DroppedOldest, &l.DroppedNewest, &l.Expired, &l.Unreadable, &l.Refused}
}

// markMu orders MarkReported's read, raise and store.
var markMu sync.Mutex

// Reported returns the losses spool counts and how many were reported.
func Reported(spool *wal.WAL) (total, reported Losses) {
	reported, _, _ = loadReported(spool)
	return totals(spool), reported
}

// totals are the loss counts of spool.
func totals(spool *wal.WAL) Losses {
	st := spool.Stats()
	return Losses{st.DroppedOldest.Events, st.DroppedNewest.Events, st.Expired.Events, st.Unreadable, st.Refused}
}

// ReportedKnown tells whether spool records what was reported (an older
// spool does not until the first MarkReported); a spool that lost nothing
// counts as known.
func ReportedKnown(spool *wal.WAL) bool {
	_, known, err := loadReported(spool)
	return err == nil && (known || totals(spool) == Losses{})
}

// loadReported reads the reported counts; known is false if there are none.
func loadReported(spool *wal.WAL) (r Losses, known bool, err error) {
	for i, n := range r.fields() {
		v, err := spool.Value(reportedKeys[i])
		if err != nil {
			return Losses{}, false, err
		}
		if len(v) == 8 {
			*n, known = binary.BigEndian.Uint64(v), true
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
	old := was.fields()
	for i, n := range r.fields() {
		v := max(*n, *old[i])
		changed = changed || v != *old[i]
		values[reportedKeys[i]] = binary.BigEndian.AppendUint64(nil, v)
	}
	if !changed {
		return nil
	}
	if err := spool.SetValues(values); err != nil {
		return fmt.Errorf("ledger: record reported losses: %w", err)
	}
	return nil
}
