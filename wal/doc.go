// Package wal is evspool's spool: a bounded, ordered, crash-safe queue of
// events in one bbolt file (go.etcd.io/bbolt).
//
// Events are appended with consecutive sequence numbers (Append), read from
// a sequence number on without being removed (Read), and removed by Ack once
// the receiver has them. The package starts no goroutines; every method is
// safe for concurrent use. docs/spool.md is the reference: the file format,
// what survives a crash and a power loss, the size cap, damage and salvage.
//
// A spool is a directory only its owner can write to, holding spool.db, a
// lock file, the marks file (what salvage needs if spool.db is lost) and the
// files its user keeps beside it (OpenFile, ReadFile, WriteFile, Rename).
// Every file is opened relative to the directory held open, never through a
// link (ErrUnsafeFile). A few small values may be kept in spool.db itself
// (SetValues, Value), and the newest event of every key its user names,
// changed in the commit of the append (AppendState, State: docs/spool.md).
//
// # Guarantees
//
// When Append returns nil its events are committed and fsync'd (unless
// Options.NoSync); concurrent Appends share one commit. Sequence numbers
// never go backwards, across restarts, compaction, salvage and the loss of
// spool.db. Ack hides entries at once and survives a process crash; Ack's
// comment says when they are gone from disk and what a power cut brings back.
//
// Options.MaxBytes bounds the file's size; Options.OnFull decides what an
// append past it does (DropOldest, DropNewest, Block). Every loss is counted
// in the file (Stats).
//
// # Damage
//
// Open checks what bbolt cannot survive (a truncated file, a torn tree, a bad
// checksum) before bbolt maps the file, and verifies every record. A damaged
// file is kept aside (spool.db.corrupt-<time>) and salvaged: every sound
// record is kept, in order, and the rest counted (Salvaged, Stats). Damage
// found later by Read is a *CorruptionError; Repair salvages online. A read
// that fails is retried, and is not damage.
package wal
