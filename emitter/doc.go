// Package emitter is the library a daemon embeds to send event lines to a
// local receiver (cloud-event-proxy's events socket, say) without losing them
// when the receiver restarts, when it dies with events unread in its socket
// buffer, or when the daemon itself restarts.
//
// Emit validates an event, commits it to an on-disk spool (package wal, a
// bounded bbolt queue; concurrent callers share one commit), echoes it to
// Options.Stdout and wakes the drainer. It never waits on the network. A
// failed commit (disk full) still echoes the event, and is counted, logged
// and returned.
//
// One drainer goroutine owns the connection. It reads a batch from the spool,
// writes it with a deadline in chunks that end at a line's end (a receiver
// never gets a torn line), waits until the receiver has read it (SIOCOUTQ on
// Linux), keeps it until the receiver must have handled it, and only then
// acknowledges (removes) it. On a failure it redials with backoff and resends
// from the oldest event not known handled: events arrive in order, at least
// once, and after a failure only a contiguous run that was in flight may
// arrive twice. docs/delivery.md is the reference for all of this: the
// promises and their exceptions, what counts as proof that the receiver
// handled an event (its next read, a linger with its end still open, its
// reader closing its end after evspool died), the replay window, poison
// events and the dead-letter file, frozen and crash-looping receivers, and
// what survives which crash.
//
// What the daemon sees:
//
//   - Flush returns once the events it waited for have left the spool, and
//     says which were not delivered (*FlushError); Close returns by the time
//     its context ends, leaving what is undelivered spooled for the next
//     Open.
//   - Stats counts what was emitted, delivered and lost. Every loss counts
//     the same way, whatever caused it (not spooled, refused, dropped,
//     expired, dead-lettered, unreadable in a damaged spool): in Stats.Lost
//     and Stats.LostByKind, logged (rate-limited) and recorded in the spool,
//     so losses of a process killed before it logged them are reported by
//     the next Open.
//   - Alive and Ready back liveness and readiness probes (package
//     emitter/metrics serves them and the metrics over HTTP).
//   - Options.Preamble writes lines such as "CMD LIVE_START" on each new
//     connection; Hold and Release gate delivery; Writer turns a child
//     process's stdout into events; Options.MaxAge drops events too old
//     to be worth sending.
//
// docs/daemon.md shows how a daemon uses these (the linuxptp-daemon change
// is its example); docs/operations.md gives the metrics, logs and limits.
package emitter
