// Package emitter is the library a daemon embeds to send event lines to a
// local receiver (cloud-event-proxy's events socket, say) without losing them
// when the receiver restarts, when it dies with events unread in its socket
// buffer, or when the daemon itself restarts.
//
// Emit validates an event, commits it to an on-disk spool (package wal),
// hands it to the drainer and echoes it to Options.Stdout; it never waits on
// the network. The drainer owns the connection: it writes batches in chunks
// that end at a line's end, waits until the receiver has read them (SIOCOUTQ
// on Linux) and must have handled them, and only then removes them from the
// spool. While it idles caught up, the Emit caller writes in its place where
// the send buffer has room, and leaves any wait to it. On a failure it redials with backoff and resends from
// the oldest event not known handled: events arrive in order, at least once.
// docs/delivery.md is the reference: the promises and their exceptions, the
// replay window, poison events and the dead-letter file, frozen and
// crash-looping receivers, and what survives which crash.
//
// What the daemon sees:
//
//   - Flush waits for the events emitted before it and says which were not
//     delivered (*FlushError); Close returns by the time its context ends,
//     leaving what is undelivered spooled for the next Open.
//   - Stats counts what was emitted, delivered and lost. Every loss, whatever
//     its cause, is counted in Stats.Lost and Stats.LostByKind, logged
//     (rate-limited) and recorded in the spool, so that the next Open reports
//     the losses of a process killed before it logged them.
//   - Alive and Ready back liveness and readiness probes (package
//     emitter/metrics serves them and the metrics over HTTP).
//   - Options.Preamble writes lines such as "CMD LIVE_START" on each new
//     connection; Hold and Release gate delivery; Writer turns a child
//     process's stdout into events; Options.MaxAge drops stale events.
//   - Options.StateKey keeps the newest event of every key, and starts each
//     new connection with those of the keys that have nothing pending, for a
//     receiver that starts empty (cloud-event-proxy v2); Options.OnReceive
//     gets what the receiver writes; Options.ReleaseIdle lets a receiver
//     that serves one connection at a time serve others.
//
// docs/daemon.md shows how a daemon uses these; docs/operations.md gives the
// metrics, logs and limits.
package emitter
