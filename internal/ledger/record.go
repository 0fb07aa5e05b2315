package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/evspool/evspool/wal"
)

// What the spool records of losses, as spool values beside the events: the
// Refused count (the spool counts the other recorded kinds in its own
// meta, in the transaction that loses the events), and how much of each
// recorded kind was logged, so that a process killed before it logged
// leaves the difference to the next. All only grow.

// keyRefused holds the Refused count. Earlier spools kept it among the
// spool's own meta values under the same name, in the same encoding: they
// read as this value.
const keyRefused = "refused_events"

// reportedKeys are the spool values of the reported counts, by Kind.
var reportedKeys = [recorded]string{"reported_dropped_oldest_events", "reported_dropped_newest_events",
	"reported_expired_events", "reported_unreadable_events", "reported_refused_events"}

// Totals are the losses spool records, by Kind (0 for the kinds it does
// not record).
func Totals(spool *wal.WAL) (Losses, error) {
	refused, _, err := loadCount(spool, keyRefused)
	return totals(spool.Stats(), refused), err
}

// Inspect is wal.Inspect, with the losses the spool records.
func Inspect(dir string, dump int) (wal.Stats, []wal.Entry, Losses, error) {
	st, entries, values, err := wal.InspectValues(dir, dump, keyRefused)
	var refused uint64
	if v := values[keyRefused]; len(v) == 8 {
		refused = binary.BigEndian.Uint64(v)
	}
	return st, entries, totals(st, refused), err
}

// totals are the losses of a spool of st, with refused.
func totals(st wal.Stats, refused uint64) Losses {
	return Losses{DroppedOldest: st.DroppedOldest.Events, DroppedNewest: st.DroppedNewest.Events,
		Expired: st.Expired.Events, Unreadable: st.Unreadable, Refused: refused}
}

// Reported returns the losses spool records and how many were reported.
func Reported(spool *wal.WAL) (total, reported Losses) {
	total, _ = Totals(spool)
	reported, _, _ = loadReported(spool)
	return total, reported
}

// ReportedKnown tells whether spool records what was reported (an older
// spool does not until the first mark); a spool that lost nothing counts as
// known.
func ReportedKnown(spool *wal.WAL) bool {
	_, known, err := loadReported(spool)
	total, terr := Totals(spool)
	return err == nil && terr == nil && (known || total == Losses{})
}

// loadReported reads the reported counts; known is false if there are none.
func loadReported(spool *wal.WAL) (r Losses, known bool, err error) {
	for k, key := range reportedKeys {
		n, ok, err := loadCount(spool, key)
		if err != nil {
			return Losses{}, false, err
		}
		r[k], known = n, known || ok
	}
	return r, known, nil
}

// loadCount reads the count under key; ok is false if there is none.
func loadCount(spool *wal.WAL, key string) (n uint64, ok bool, err error) {
	v, err := spool.Value(key)
	if err != nil || len(v) != 8 {
		return 0, false, err
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// markReported records in spool that the losses up to r were reported,
// and the Refused count up to refused; the counts are only ever raised. It
// commits only when something changed. Its caller orders its calls.
func markReported(spool *wal.WAL, r Losses, refused uint64) error {
	was, known, err := loadReported(spool)
	if err != nil {
		return err
	}
	values := make(map[string][]byte, len(reportedKeys)+1)
	changed := !known
	for k, key := range reportedKeys {
		v := max(r[k], was[k])
		changed = changed || v != was[k]
		values[key] = binary.BigEndian.AppendUint64(nil, v)
	}
	if refused > 0 {
		stored, _, err := loadCount(spool, keyRefused)
		if err != nil {
			return err
		}
		if refused > stored {
			values[keyRefused], changed = binary.BigEndian.AppendUint64(nil, refused), true
		}
	}
	if !changed {
		return nil
	}
	if err := spool.SetValues(values); err != nil {
		return fmt.Errorf("ledger: record losses: %w", err)
	}
	return nil
}
