package wal

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Every loss is reported by some process: the spool counts its losses
// (drops, expiries, events a salvage could not read, events refused before
// the spool) in the transaction that loses the events, and keeps beside
// each count how much of it a process has reported (logged). A process
// killed before it logged its losses leaves the difference, which the next
// one reports. The reported values only grow, as the counts do.
var (
	keyReportedDropOldest = []byte("reported_dropped_oldest_events")
	keyReportedDropNewest = []byte("reported_dropped_newest_events")
	keyReportedExpired    = []byte("reported_expired_events")
	keyReportedUnreadable = []byte("reported_unreadable_events")
	keyReportedRefused    = []byte("reported_refused_events")
)

// Losses are event counts of the losses the spool records.
type Losses struct {
	DroppedOldest uint64 // removed under DropOldest
	DroppedNewest uint64 // refused under DropNewest
	Expired       uint64 // removed by Expire
	Unreadable    uint64 // pending when the file was damaged, not recovered by its salvage
	Refused       uint64 // refused before the spool, recorded by CountRefused
}

// max is l raised, count by count, to o's where o's is larger.
func (l Losses) max(o Losses) Losses {
	return Losses{max(l.DroppedOldest, o.DroppedOldest), max(l.DroppedNewest, o.DroppedNewest),
		max(l.Expired, o.Expired), max(l.Unreadable, o.Unreadable), max(l.Refused, o.Refused)}
}

// reportedFields are the meta values of this file, for meta.fields.
func (m *meta) reportedFields() []metaField {
	return []metaField{
		{keyReportedDropOldest, &m.reported.DroppedOldest},
		{keyReportedDropNewest, &m.reported.DroppedNewest},
		{keyReportedExpired, &m.reported.Expired},
		{keyReportedUnreadable, &m.reported.Unreadable},
		{keyReportedRefused, &m.reported.Refused},
	}
}

// losses are the loss counts m holds.
func (m *meta) losses() Losses {
	return Losses{m.droppedOldest.Events, m.droppedNewest.Events, m.expired.Events, m.unreadable, m.refused}
}

// Reported returns the losses the spool counts, across restarts, and how
// many of them were reported (see MarkReported).
func (w *WAL) Reported() (total, reported Losses) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.meta.losses(), w.meta.reported
}

// MarkReported records that the losses up to r were reported: each count
// is raised to r's where r's is larger, never lowered. It commits a small
// transaction when something changed.
func (w *WAL) MarkReported(r Losses) error {
	if err := w.usable(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	m := w.meta
	m.reported = m.reported.max(r)
	if m.reported == w.meta.reported {
		return nil
	}
	if err := w.updateMeta(m.store); err != nil {
		return fmt.Errorf("wal: record reported losses in %s: %w", w.path, err)
	}
	w.meta.reported = m.reported
	return nil
}

// CountRefused records that n events were refused before they reached the
// spool (a line over the size limit, say): a loss the spool keeps with the
// others, so that a process killed before it logged it leaves it for the
// next one to report. It commits a small transaction, synced as appends
// are.
func (w *WAL) CountRefused(n uint64) error {
	if err := w.ready(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	m := w.meta
	m.refused += n
	if err := w.updateMeta(m.store); err != nil {
		return fmt.Errorf("wal: record %d refused events in %s: %w", n, w.path, err)
	}
	w.meta.refused = m.refused
	return nil
}

// ReportedKnown tells whether the spool records what was reported: spools
// of earlier versions do not, until the first commit of this one.
func (w *WAL) ReportedKnown() bool {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.meta.reportedSeen
}

// noteReportedSeen is meta.load's hook: whether the values of this file
// were in the bucket.
func (m *meta) noteReportedSeen(b *bolt.Bucket) {
	m.reportedSeen = b.Get(keyReportedDropOldest) != nil
}
