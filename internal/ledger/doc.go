// Package ledger keeps what the emitter remembers beside a spool's events,
// on top of package wal. Book is the one account of its losses: every kind,
// its count, its rate-limited line (Reporter) and what is recorded in the
// spool as reported, so that the next start reports what a killed process
// could not. Beside it: a suspected poison event's strikes (spool values),
// and the dead letters it writes (files dead-letters, dead-letters.1,
// opened through wal.OpenFile; ReadDeadLetters reads them). The
// formats are in docs/spool.md.
package ledger
