// Package ledger keeps what the emitter remembers beside a spool's events,
// on top of package wal: a suspected poison event's strikes and how much of
// each loss count was reported (spool values), and the dead letters it
// writes (files dead-letters, dead-letters.1, opened through wal.OpenFile;
// internal/deadletters reads them). The formats are in docs/spool.md.
package ledger
