package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/evspool/evspool/wal"
)

// unprovenKey is the spool value counting the events acknowledged without
// proof that the receiver handled them (over TCP its kernel took them;
// where reads cannot be seen, they were written). They are not lost and not
// known delivered.
const unprovenKey = "acked_unproven_events"

// Unproven returns how many events spool's users acknowledged without proof
// of handling, across processes.
func Unproven(spool *wal.WAL) (uint64, error) {
	v, err := spool.Value(unprovenKey)
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

// AddUnproven raises the count Unproven returns by n.
func AddUnproven(spool *wal.WAL, n uint64) error {
	if n == 0 {
		return nil
	}
	markMu.Lock()
	defer markMu.Unlock()
	was, err := Unproven(spool)
	if err != nil {
		return fmt.Errorf("ledger: read %s: %w", unprovenKey, err)
	}
	if err := spool.SetValues(map[string][]byte{unprovenKey: binary.BigEndian.AppendUint64(nil, was+n)}); err != nil {
		return fmt.Errorf("ledger: record events acknowledged without proof: %w", err)
	}
	return nil
}
