// Package wal is evspool's spool: a bounded, ordered, crash-safe queue of
// events in one bbolt file (go.etcd.io/bbolt).
//
// Events are appended with consecutive sequence numbers (Append), read from
// a sequence number on without being removed (Read), and removed by Ack once
// the receiver has them. The package starts no goroutines; every method is
// safe for concurrent use. docs/spool.md is the reference: the file format,
// what survives a crash and a power loss, the size cap, damage and salvage,
// and the limits.
//
// # Directory
//
// A spool is a directory that the effective user owns and no one else can
// write to (Open refuses any other, and a symlink), holding spool.db (the
// bbolt file), lock (flock(2)ed while a process has the spool open), marks
// (what salvage needs if spool.db is lost), and the files its users keep
// beside it (dead-letters, receiver, status.json: OpenFile, Rename,
// ReadFile, WriteFile). Every file is opened relative to the directory held
// open, O_NOFOLLOW, created 0600: a symlink or a non-regular file where one
// should be is refused (ErrUnsafeFile), never followed. A few small values
// its user keeps beside the events (SetValues, Value) are stored in
// spool.db, checksummed, and carried over by compaction and salvage.
//
// # Guarantees
//
// When Append returns nil its events are committed: written and fsync'd
// (unless Options.NoSync). Sequence numbers never go backwards, across
// restarts, Ack, compaction, salvage and the loss of spool.db. Read returns
// entries in sequence order; Ack(n) removes every entry up to n at once from
// what Read, Len and Stats see. Ack costs no synced commit of its own: the
// deletions ride the next append (or FlushAcks, a compaction, Close), and
// the marks file remembers them across a crash of the process. After a power
// loss, entries acknowledged since the last synced deletion may come back,
// as one contiguous run from the head, in order.
//
// Concurrent Appends are committed together (group commit): about one fsync
// per group of callers. A Read between two commits waits (2 ms at most) for
// the callers to regroup.
//
// # Size cap
//
// Options.MaxBytes bounds the file's size on disk. When an append would pass
// it, Options.OnFull decides: DropOldest, DropNewest or Block. Every drop is
// counted in the file, with the other losses (Stats).
//
// # Damage
//
// Before bbolt maps a file, Open checks what bbolt cannot survive cleanly
// (a truncated file, a torn tree, a bad checksum) and verifies every record.
// A damaged file is kept aside (spool.db.corrupt-<time>) and salvaged: every
// sound record is kept, in order, and the pending events not recovered are
// counted (Salvaged, Stats). Damage found later by Read is reported as a
// *CorruptionError, and Repair does the same salvage online. A read that
// fails is retried, and is not damage.
package wal
