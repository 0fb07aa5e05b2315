// Package ledger keeps what the emitter remembers beside a spool's events,
// on top of package wal: a suspected poison event's strikes and how much of
// each loss count was reported (spool values), the receiver last written to
// (file receiver) and the dead letters (files dead-letters, dead-letters.1),
// opened through wal.OpenFile. The formats are in docs/spool.md.
package ledger
