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
// A spool is a directory (created 0700; Open refuses one that another user
// owns, others can write to, or that is a symlink) holding, each opened
// relative to the directory held open, never through a symlink (dir.go):
//
//	spool.db                    the bbolt file (0600)
//	lock                        flock(2)ed while a process has the spool open
//	marks                       what salvage needs if spool.db is lost (below)
//	spool.db.corrupt-<time>     a damaged file replaced by salvage, kept for inspection
//	                            (at most 2, see Damage)
//	spool.db.compact            a compaction in progress (removed at the next Open)
//	spool.db.salvage            a salvage in progress (removed at the next Open)
//	dead-letters, dead-letters.1  poison events set aside by the emitter (deadletter.go)
//	receiver                    the receiver the emitter last wrote to (PeerFile, peer.go)
//	status.json                 the CLI's status, for inspect while the spool is locked
//
// spool.db has two buckets:
//
//	events   key: sequence number, 8 bytes big-endian, so cursor order is FIFO order
//	         value, a record (one event):
//	                crc32c (4) | append time, unix ns, bit 63 set (8) |
//	                CLOCK_BOOTTIME at append, ns (8) | event bytes
//	         or a frame (events of one commit, numbered on from the key):
//	                crc32c (4) | append time, bit 63 set (8) |
//	                CLOCK_BOOTTIME, bit 63 set (8) | count uvarint |
//	                count lengths, uvarint | the events' bytes
//	         The checksum (Castagnoli) covers the key, a version byte (2 for
//	         a record, 3 for a frame), the times and the bytes. A commit of
//	         several events packs them into frames of at most half a page's
//	         room (2016 bytes with 4 KiB pages), one bbolt key each instead
//	         of one an event; a lone event, or one too large to share, is a
//	         record. A frame leaves the file whole, once its last event is
//	         acknowledged, dropped or expired; till then the removal mark
//	         hides the events before. Records of earlier versions (no boot
//	         clock, bit 63 clear) are still read; see record.go and
//	         bootstamp.go.
//	meta     next_sequence          the number the next event gets
//	         removed_through        every sequence up to it was acked or dropped
//	         dropped_oldest_events, dropped_oldest_bytes, dropped_newest_events,
//	         dropped_newest_bytes   drop counters per policy
//	         expired_events, expired_bytes  removed by Expire (too old to send)
//	         unreadable_events      lost to damage: not recovered by a salvage
//	         refused_events         refused before the spool (CountRefused)
//	         boot_id, boot_first_seq  the boot the newest records were written
//	                                in, and its first sequence (bootstamp.go)
//	         reported_*             how much of each loss counter was logged
//	                                (reported.go)
//	         format_version         3 (events may be in frames)
//	         Each value is payload | crc32c(key | payload) (metacodec.go):
//	         a uint64 is 8 bytes big-endian, then the 4-byte checksum. A
//	         value failing its check is damage (salvaged, never trusted).
//	         Format 1 (bare 8-byte values, no checksum) is read and rewritten
//	         as format 3 by the first Open; format 2 (the same values, no
//	         frames) is read as it is and marked format 3 before anything is
//	         stored, so that an evspool of format 2, which would take a frame
//	         for damage, names the format instead.
//
// The meta counters are written in the same transaction as the events they
// describe, so they never disagree with the data after a crash. The pending
// count and bytes are recomputed at Open from a full scan that also verifies
// every checksum.
//
// marks holds, outside the file that may be damaged, three numbers (uint64
// big-endian each, through the same codec under the key "marks"): a sequence number no event has
// reached yet, raised 65536 at a time and fsync'd before a commit would pass
// it, and lowered to the next number (fsync'd) by Close; removed_through,
// rewritten (without fsync) by every Ack: it is where an acknowledgement is
// kept until a commit deletes the entries (see Acknowledgements); and a flag
// saying the first is exact (the spool was closed cleanly). Salvage and a
// spool.db created anew (the old one deleted) number on from the first;
// Open and salvage drop what the second says was removed. The 20-byte
// format of earlier versions (no flag) is still read.
//
// # Guarantees
//
// When Append returns nil its events are committed: bbolt has written and
// fsync'd them (unless Options.NoSync). Sequence numbers never go backwards,
// across restarts, Ack, compaction, salvage and the loss of spool.db (not of
// the marks file, below). Read returns entries in
// sequence order; Ack(n) removes every entry up to n at once from what Read,
// Len and Stats see.
//
// # Acknowledgements
//
// Ack costs no synced commit of its own while appends flow. It writes n to
// the marks file's removed_through (pwrite, no fsync: the page cache
// survives the death of the process), hides the entries, and an append
// transaction deletes them before it stores its events once 256 are
// waiting (rideMin; at once when the append may need their room). With no
// appends to ride on (a backlog drained, an idle spool), the deletions are
// committed on their own, batched: when the entries acknowledged but still
// in the file cost more than min(budget/32, 2 MiB), when FlushAcks finds
// no commit for the time it is given (the emitter's drainer calls it every
// 100 ms while idle), before a compaction, and at Close. If the marks
// file cannot be written, Ack commits the deletion at once.
//
//   - After a crash of the process no acknowledged event comes back: Open
//     applies removed_through (the file may still hold the entries).
//   - After a power loss or a kernel crash, the entries acknowledged since
//     the last synced commit that deleted some may come back. Deletions
//     always take a prefix, so they come back as one contiguous run from
//     the head, in order, before any event that was not acknowledged: the
//     at-least-once replay a receiver already sees when a connection dies.
//     A second power loss during that replay (a drain has no appends to
//     carry its acknowledgements) starts it over from the head: each power
//     loss, one contiguous replay; none skips an event.
//   - The size cap holds: acknowledged entries take pages until deleted,
//     and an append deletes them before it stores anything; Ack itself
//     never writes to spool.db, so it cannot grow it.
//
// Concurrent Appends are committed together (group commit): the first caller
// leads a transaction holding everything queued while the previous commit was
// on its fsync, so 64 concurrent callers cost about one fsync per group. A
// lone caller commits at once. A leader first waits for the callers the
// previous commit released and that have not come back (at most half a
// commit's time, 2 ms at most): without that, callers appending in a loop
// split into two groups that take turns, each half the size.
//
// # Size cap
//
// Options.MaxBytes bounds the file's size on disk, not just the event bytes.
// Each entry costs its share of the leaf pages it occupies: a leaf element
// is its bytes plus 44 (element header, key, 20-byte record header), bbolt never
// splits one across pages, so when k fit in a page each costs a kth of it
// (147 bytes for a 100-byte event, a third of a page for a 1000-byte one),
// and a larger one costs whole pages. The entries may cost up to a budget of
// MaxBytes less 1/8 and two growth steps, the room bbolt needs for branch,
// meta and freelist pages and for pages freed by recent commits. bbolt's
// growth step (AllocSize) is lowered from 16 MiB to at most 1 MiB so the
// file cannot overshoot by much. If the file still outgrows the cap (freed
// pages too scattered for a large event), it is compacted, and if that is
// not enough (or it has not grown since the last compaction) the budget is
// lowered, down to MaxBytes/2; it comes back when the spool empties. When
// the budget is spent, Options.OnFull decides: DropOldest (default),
// DropNewest, or Block. Every drop is counted in the meta bucket, so the
// counts survive restarts. Block never drops: an append it let in is stored
// even if the budget was lowered meanwhile.
//
// bbolt never shrinks its file. Once a backlog has drained (the entries take
// less than a sixteenth of a file above 512 KiB, and less than 2 MiB), Ack
// compacts: it copies the
// pending entries into spool.db.compact, fsyncs it, renames it over spool.db
// and reopens. Appends wait meanwhile; none is lost. Reads go on during the
// copy.
//
// # Damage
//
// Before bbolt maps a file, Open checks what bbolt cannot survive cleanly:
// an empty file (bbolt would take it for a new one), a file shorter than its
// meta page says (truncated: bbolt would fault reading past its end), a
// freelist page that is not one, and bucket trees that are not trees: each
// is walked page by page (one bit of memory per page of the file) for a page
// reached twice (a torn branch page pointing back up would send bbolt's
// cursor round forever), outside the file, of the wrong type, or a leaf at
// another depth than the others. Open then verifies every record. Any of
// these, a root bucket element that is not a bucket or the events or meta
// bucket missing, an inline bucket whose elements leave its value, are
// flagged buckets or out of order, a freelist page naming another page, a
// page in no tree and not free, a meta page failing its checksum in a spool
// closed cleanly, a meta value failing its checksum, bbolt's
// ErrIncompatibleValue on the spool's buckets, a file bbolt cannot open, a
// record whose checksum fails, or a panic raised by bbolt while reading is
// damage. A memory fault (or a failed read) is not yet damage: the file is
// read again through pread(2), the open retried with backoff (4 tries from
// 20 ms) and logged; an I/O error that lasts fails Open without a salvage,
// and only a file that reads whole yet faults bbolt every time is damaged
// (transient.go). Damage is salvaged: its pages are scanned without bbolt, every sound record newer
// than removed_through (the larger of the file's and the marks file's) is
// written in order into spool.db.salvage, whose numbering resumes above the
// marks file's reservation; the damaged file is kept as
// spool.db.corrupt-<time> (a hard link, or a copy where the filesystem has
// none) and spool.db.salvage is renamed over spool.db. Open then succeeds
// and Salvaged reports what was done: how many events were recovered and how
// many pending ones were not (the numbers above the removal mark and below
// the next number, as the newest meta copy, or the marks file after a clean
// Close, gives it). Damage found later by Read is reported as a
// *CorruptionError; Repair does the same salvage online. A salvage that
// fails (a full disk) leaves spool.db as it was, still in use: Repair can be
// called again. A spool left without its database (a compaction or repair
// that could not reopen it) reopens itself at the next call, at most once a
// second, and Stats.Heals counts it.
//
// Damaged copies are bounded: the newest is always kept; older ones only
// while there are at most two in all and they take no more than MaxBytes
// together, beside the cap. The others are removed, and
// SalvageReport.RemovedCopies (logged with the report) names them.
//
// # Crash consistency
//
// With fsync on, what is durable, and in which order, for each operation
// (a file's fsync makes its data durable, not its name: that takes an fsync
// of the directory):
//
//   - Open: the spool directory is created, and the parent of each directory
//     created fsync'd. marks is created and the directory fsync'd; spool.db
//     is created by bbolt (which fsyncs it) and the directory fsync'd. The
//     leftovers spool.db.compact and spool.db.salvage are removed (and the
//     directory fsync'd): neither was ever renamed over spool.db, so neither
//     holds anything spool.db lacks.
//   - Append: the marks reservation is raised and fsync'd before a commit
//     hands out numbers past it. bbolt writes the new pages, fdatasyncs,
//     writes the meta page, fdatasyncs; Append returns (and evspool echoes)
//     only then. A cut before the second fdatasync leaves the previous meta
//     page in force: the commit did not happen, but its pages may be in the
//     file. Those are why Open settles (below).
//   - Ack: no commit. removed_through in marks is written (no fsync) and
//     the entries are hidden; an append's commit deletes them once 256
//     are waiting (or a commit of deletions alone, see Acknowledgements). A
//     process crash keeps the mark (Open applies it); a cut may lose it,
//     and then the entries acknowledged since the last commit that deleted
//     some come back: one contiguous run from the head, in order, delivered
//     again (at least once), never lost.
//   - Open after a crash (settling): a reservation above the file's next
//     number means the last process did not Close, so a commit may have been
//     cut short, leaving pages with records and a meta bucket that were
//     never committed, under numbers the file will hand out again. bbolt
//     never reads them; a salvage scanning every page would (resurrecting
//     events never accepted, applying a removal mark that drops committed
//     ones). So Open compacts first (below): only committed entries are
//     copied. Then the reservation is lowered to the next number and
//     fsync'd. Close does the same lowering, so a clean restart does not
//     compact.
//   - Compaction: the pending entries are written into spool.db.compact,
//     which is fdatasync'd; it is renamed over spool.db and the directory
//     fsync'd. A cut before the rename leaves spool.db whole (the leftover
//     is removed at Open); after it, the new file, complete.
//   - Salvage: spool.db is only read. The salvaged file is written into
//     spool.db.salvage and fdatasync'd; spool.db is hard-linked (or copied
//     and fsync'd) to spool.db.corrupt-<time> and the directory fsync'd;
//     spool.db.salvage is renamed over spool.db and the directory fsync'd.
//     A cut before the rename leaves the damaged spool.db in place: the next
//     Open finds the same damage and salvages again, reusing the copy
//     already kept (same inode). After it, the salvaged file is in place and
//     the damaged copy kept. At no point is there no spool.db, or a partial
//     one.
//   - marks: written in place (20 or 28 bytes, one sector) with a checksum;
//     a torn or lost write reads as zeros (the numbers are then taken from
//     spool.db alone) or as the previous value.
//
// With fsync off (NoSync) none of these fsyncs is made: a process crash
// loses nothing (the page cache survives it), a power loss can lose recent
// events and damage the file, which is then salvaged; a salvage of a file
// torn that way can deliver events again, or late: an exception to FIFO
// order (docs/delivery.md, "The promises"). internal/powercut
// tests both against a filesystem that throws away what was not synced.
//
// # Caveats
//
//   - With NoSync, committed events survive a crash of the process but not
//     a power loss or a kernel crash: bbolt's NoSync skips fsync entirely.
//   - Salvage scans old copies of pages too; the marks file tells it which
//     were acked. Only after a power loss (removed_through is not fsync'd)
//     that also damaged spool.db can acked events come back; none is lost
//     that was readable.
//   - After a salvage, numbering resumes above the marks file's reservation:
//     up to 65536 numbers are skipped, and LastSeq reports one never used.
//   - The first Open after a crash compacts the spool (settling, above):
//     with a full 64 MiB spool, a fraction of a second more. If that
//     compaction fails, numbering goes on above the reservation instead;
//     a salvage of that same file could then still take the cut commit's
//     pages for committed ones.
//   - Salvage during the first Open after a crash (damage and a cut commit
//     at once) scans the cut commit's pages too: its events may come back.
//   - A meta page of spool.db destroyed while the other is sound is damage
//     when the marks file says the spool was closed cleanly; otherwise it
//     may be one torn by a cut, and bbolt uses the other, which may be one
//     transaction older.
//   - Salvage takes the meta values from the copy in force when it passes
//     its checks, else from the largest copies in older pages that pass
//     theirs (each written by a commit; every value only grows), then the
//     marks file and the records raise them. With fsync off, an Open after
//     a crash numbers on above the marks file's reservation: up to 65536
//     numbers skipped, none handed out twice, no acknowledgement covering a
//     new one.
//   - The trees are checked when the file is opened (Open, and the reopen
//     after a compaction or a salvage), not while it is in use: a page
//     changed under a running process by something other than its bbolt
//     (a writer ignoring the lock, a disk returning other data) can still
//     make bbolt loop forever or overflow its stack in Read or Ack.
//   - Compaction writes the fresh file beside the old one: while it runs the
//     spool takes up to twice its size on disk.
//   - Salvage keeps the set of recovered sequence numbers in memory (about
//     40 bytes per pending event).
//   - A frame is checked, kept and lost as one: a flipped bit in it loses
//     every event it holds (at most one commit's, 2016 bytes of them),
//     where each event its own record lost one. Making room by dropping
//     the oldest drops whole frames: up to a frame more than needed, every
//     event counted.
//   - Compaction copies the pending entries while appends wait. Ack runs it
//     only when they take less than 2 MiB (and a sixteenth of the file): a
//     pause of tens of milliseconds. A compaction forced by the size cap
//     copies everything pending: with a full 64 MiB spool, a fraction of a
//     second.
//   - The file lock is flock(2): it does not work across NFS.
//   - Open's start-up scan reads every record; Options.Context cuts it short.
//     bbolt's own open (which reads the file ahead, MAP_POPULATE) cannot be
//     interrupted.
//   - Inspect holds no lock of the spool's while it reads, but bbolt holds a
//     shared flock on spool.db for as long as Inspect has it open. Inspect
//     therefore looks at the writer's lock every 1024 events and gives way
//     (ErrLocked) as soon as a process has taken it, well inside that
//     process's LockTimeout.
package wal
