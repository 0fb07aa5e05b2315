// Package wal is evspool's spool: a bounded, ordered, crash-safe queue of
// events in one bbolt file (go.etcd.io/bbolt).
//
// Events are appended with consecutive sequence numbers, read from a sequence
// number on without being removed (peek), and removed by Ack once the
// receiver has them. The package starts no goroutines; every method is safe
// for concurrent use.
//
// # On-disk layout
//
// A spool is a directory (created 0700) holding:
//
//	spool.db                    the bbolt file (0600)
//	lock                        flock(2)ed while a process has the spool open
//	spool.db.corrupt-<time>     a damaged file moved aside by salvage, kept for inspection
//	spool.db.compact            a compaction in progress (removed at the next Open)
//
// spool.db has two buckets:
//
//	events   key: sequence number, 8 bytes big-endian, so cursor order is FIFO order
//	         value: crc32c (4) | append time, unix ns (8) | event bytes
//	         The checksum (Castagnoli) covers the key, the time and the bytes.
//	meta     next_sequence          the number the next event gets
//	         removed_through        every sequence up to it was acked or dropped
//	         dropped_oldest_events, dropped_oldest_bytes, dropped_newest_events,
//	         dropped_newest_bytes   drop counters per policy
//	         format_version         1
//	         Each value is a uint64, 8 bytes big-endian.
//
// The meta counters are written in the same transaction as the events they
// describe, so they never disagree with the data after a crash. The pending
// count and bytes are recomputed at Open from a full scan that also verifies
// every checksum.
//
// # Guarantees
//
// When Append returns nil its events are committed: bbolt has written and
// fsync'd them (unless Options.NoSync). Sequence numbers never go backwards,
// across restarts, Ack, compaction and salvage. Read returns entries in
// sequence order; Ack(n) removes every entry up to n in one transaction.
//
// Concurrent Appends are committed together (group commit): the first caller
// leads a transaction holding everything queued while the previous commit was
// on its fsync, so 64 concurrent callers cost about one fsync per group. A
// lone caller commits at once: there is no timer.
//
// # Size cap
//
// Options.MaxBytes bounds the file's size on disk, not just the event bytes.
// Each entry costs its bytes plus 36 bytes of overhead (leaf element header,
// key, record header) against a budget of MaxBytes less 1/8 and two growth
// steps, the room bbolt needs for branch, meta and freelist pages and for
// pages freed by recent commits. bbolt's growth step (AllocSize) is lowered
// from 16 MiB to at most 1 MiB so the file cannot overshoot by much. If the
// file still outgrows the cap (freed pages too scattered for a large event),
// it is compacted, and if that is not enough the budget is lowered. When the
// budget is spent, Options.OnFull decides: DropOldest (default), DropNewest,
// or Block. Every drop is counted in the meta bucket, so the counts survive
// restarts.
//
// bbolt never shrinks its file. Once a backlog has drained (the entries take
// less than a quarter of a file above 2 MiB), Ack compacts: it copies the
// pending entries into spool.db.compact, fsyncs it, renames it over spool.db
// and reopens. Appends wait meanwhile; none is lost. Reads go on during the
// copy.
//
// # Damage
//
// Open verifies every record. A file bbolt cannot open, a record whose
// checksum fails, or a panic (or memory fault) raised by bbolt while reading
// is damage: the file is renamed to spool.db.corrupt-<time>, its pages are
// scanned without bbolt, and every sound record newer than removed_through is
// written in order into a fresh spool.db. Open then succeeds and Salvaged
// reports what was done. Damage found later by Read is reported as a
// *CorruptionError; Repair does the same salvage online.
//
// # Caveats
//
//   - With NoSync, committed events survive a crash of the process but not
//     a power loss or a kernel crash: bbolt's NoSync skips fsync entirely.
//   - Salvage scans old copies of pages too. A record acked after the last
//     readable meta copy was written can be delivered again; none is lost
//     that was readable.
//   - Salvage keeps the set of recovered sequence numbers in memory (about
//     40 bytes per pending event).
//   - Compaction copies the pending entries while appends wait: with a full
//     64 MiB spool that is a pause of a fraction of a second. It runs only
//     when the entries take less than a quarter of the file.
//   - The file lock is flock(2): it does not work across NFS.
package wal
