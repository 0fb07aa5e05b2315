// Package refrecv holds evspool's reference receivers: line receivers that
// read the way the real ones behind its socket do. Start's Receiver is the
// one evspool ships: `evspool sink` and `evspool demo` run it, and so do the
// tests and the bench. It reads the way cloud-event-proxy does: it listens
// on a Unix (or TCP) address, serves every connection in its own goroutine,
// and reads each with a bufio.Scanner whose longest line is 64 KiB including
// the newline. StartCEP, StartPreFork and StartV2 run the other kinds (below)
// for tests and the bench.
//
// On top of that it records every line in arrival order with the time it was
// read, and it lets fault tests misbehave on purpose: pause reading so data
// piles up in the socket buffers, read slowly, never read, close gracefully,
// die abruptly, and come back on the same address.
//
// # What "received" means
//
// A line is recorded when the scanner returns it. The scanner reads from the
// socket in chunks of up to 4 KiB (more for long lines), so the kernel can
// count bytes as read a little before they are recorded. To keep that
// difference from looking like loss in tests, lines already read from the
// socket are always recorded, even when the receiver is then killed; only
// what the kernel still held is lost, which is exactly what a sender that
// acknowledges on consumption can recover. Options.HandleTime changes that:
// each line then takes that long to handle before it is recorded, and Kill
// loses the lines read but not handled, as a busy cloud-event-proxy does.
//
// # Differences from cloud-event-proxy
//
//   - Lines are split on '\n' only and recorded byte for byte; cloud-event-proxy
//     uses bufio.ScanLines, which also drops a trailing '\r'. Set
//     Options.StripCR for that behaviour.
//   - After a read error (a line over the limit, say) cloud-event-proxy stops
//     reading but leaves the connection open; refrecv closes it and records
//     the error (see Receiver.ConnErrors).
//   - A line cut short by the peer closing is delivered, as ScanLines does; a
//     line cut short by Close or Kill is not.
//
// # A receiver child that behaves like cloud-event-proxy
//
// The in-process Receiver records a line as soon as it reads it, so a kill
// never loses what it read. StartCEP runs the other kind, in a child process
// (the test binary itself: its TestMain calls MaybeRunCEP): cloud-event-proxy's
// receive loop as it is, an accept loop, a goroutine per connection, a default
// bufio.Scanner, a per-line handling time (CEPConfig.PerLine) after which the
// line is appended to a file, a connection left unread when its scanner fails
// and closed at the next garbage collection (every CEPConfig.GCInterval), the line "CMD RESTART" removing the socket and re-executing
// the process, and optionally shutdown(SHUT_WR) on every connection. CEP.Kill
// SIGKILLs it: what it had read but not handled is gone, as in production.
//
// # A receiver like cloud-event-proxy v2
//
// StartV2 runs, in process, a receiver like linuxptp-daemon's own
// cloud-event-proxy (v2): one connection at a time, a status request
// written on each, NDJSON state messages kept in a cache (V2Cache) that
// publishes a key only when its value changes, stamped with the message's
// timestamp. Kill forgets the cache, as a restarted proxy starts empty.
// V2Options.WriteBackEvery makes it write back with blocking writes, so
// that a sender that never reads stalls it.
//
// # Caveats
//
//   - Memory grows with every recorded line; a long-running sink sets
//     Options.CountOnly.
//   - Kill leaves a Unix socket file behind, like a crashed process, so
//     dialing it fails with ECONNREFUSED until Restart removes it.
package refrecv
