// Command bench is evspool's benchmark suite: throughput, latency and loss
// under disconnects, for evspool and the alternatives a daemon author would
// pick instead, in the same run, against the same receiver, with the same
// events.
//
// Run it from this directory (or through the top-level Makefile):
//
//	go run . -quick                 # make bench-quick: a subset, under a minute
//	go run .                        # make bench: the full matrix, with charts
//
// # How a run works
//
// The harness (this process) owns the receiver, internal/refrecv, and
// injects the receiver's faults (Kill, Restart, PauseReading, a read rate).
// Each contender runs in a child process, this binary re-executed in
// "producer" mode, so that an emitter crash is a real SIGKILL and the
// producer's anonymous memory (RssAnon in /proc/<pid>/status) is its own.
// For the spooled contenders the restarted child reopens the same spool.
//
// Every event is 100 bytes and carries its producer, its sequence number and
// the wall-clock time it was handed to the contender; the receiver stamps
// each line on arrival. From those the harness computes loss, duplicates,
// order (by internal/verify's rule, see check.go), latency and the time to
// resume after an outage. Runs of different contenders are interleaved
// round by round, so the noise of a shared machine falls on all of them.
//
// # Contenders
//
//   - evspool-fsync, evspool-nofsync: the emitter package, fsync on and off.
//   - reconnect-only: no spool; write, and on failure reconnect with
//     exponential backoff and retry once, then drop (what daemons do today).
//   - write-through: one connection, no reconnect: the socket's ceiling.
//   - dque, tidwall-wal: the same drainer (peek a batch, write, wait until
//     the receiver has read it, acknowledge) over github.com/joncrlsn/dque and
//     github.com/tidwall/wal, one fsync per appended batch and per ack.
//   - least-durable: per line one bbolt commit (put line n, delete line
//     n-1) and one socket write; the yardstick of the node-cost scenario,
//     which measures CPU and system calls per event and idle.
//
// This is a module of its own so that those queues, gonum/plot and x/term
// never enter the library's go.mod.
package main
