// Package demo is `evspool demo`: a self-contained run, on temporary paths,
// that shows events surviving crashes of the receiver and of evspool itself,
// side by side with what the usual fix (reconnect with backoff, no spool)
// loses under the same faults.
//
// # The set-up
//
// A producer emits real-shaped PTP lines (testdata/ptp-events.txt, each
// given a unique timestamp) at a steady rate and hands each one to two
// senders:
//
//   - evspool: a real `evspool run` child process (the binary re-executed),
//     fed through its stdin, delivering to receiver A;
//   - reconnect-only: an in-process sender with the known fix and no spool
//     (plain writes with a write deadline; on an error it reconnects once
//     with capped exponential backoff and retries the event once, else
//     drops it), delivering to receiver B.
//
// Both receivers are internal/refrecv, which reads like cloud-event-proxy,
// and suffer the same faults at the same moments: a stall (reading stops,
// data piles up unread), a crash (Kill: what was unread is gone), a restart.
// The evspool child is SIGKILLed and restarted on the same spool twice, once
// during the receiver's outage and once mid-delivery; at the same moments
// the reconnect-only sender loses what it held in memory and its connection,
// as a restarted process would.
//
// # What is compared
//
// Every produced event is looked for at each receiver (internal/verify for
// evspool: all there, in order, duplicates only as replayed runs). Before
// each SIGKILL the producer waits until evspool has echoed (committed) what
// it was handed: evspool's promise starts at the commit, as it does for a
// daemon whose Emit returned; lines still in a pipe when a process dies are
// the pipe's. Nothing else is arranged: the kill interrupts whatever
// delivery is in flight.
package demo
