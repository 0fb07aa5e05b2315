// Package ledger keeps what the emitter needs to remember about a spool
// beside its events, on top of package wal: the strikes of a suspected
// poison event and how much of each loss count was reported (values in the
// spool, wal.SetValues), the receiver last written to (the file receiver)
// and the events set aside as poison (the files dead-letters and
// dead-letters.1), each opened in the spool directory through wal.OpenFile,
// never through a link. The formats are in docs/spool.md; a spool written
// before this package existed keeps them under the same names, the same
// bytes.
package ledger
