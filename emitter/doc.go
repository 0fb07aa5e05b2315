// Package emitter is the library a daemon embeds to send event lines to a
// local receiver (cloud-event-proxy's events socket, say) without losing them
// when the receiver restarts, when it dies with events unread in its socket
// buffer, or when the daemon itself restarts.
//
// Emit validates an event, commits it to an on-disk spool (package wal, a
// bounded bbolt queue; concurrent callers share one commit), echoes it to
// Options.Stdout and wakes the drainer. It never waits on the network.
//
// One drainer goroutine owns the connection. It reads a batch from the spool,
// writes it with a deadline, waits until the receiver has read it, keeps it
// in the replay window until the receiver must have handled it, and only
// then acknowledges (removes) it. On any error it closes the connection,
// backs off (exponential with jitter, never giving up, 10 ms to 100 ms by
// default), redials and resends from the oldest unacknowledged event. Events
// therefore arrive in order, at least once: after a failure only a contiguous
// run that was in flight may arrive twice.
//
// On a Unix socket the backoff is cut short: the drainer watches the socket's
// directory (inotify, Linux) and dials as soon as the socket's path is
// created or renamed into place, then up to 25 times while refused, 0.25 ms
// apart doubling to 2 ms (a listener binds before it listens, and a dial in
// between is refused). A returning receiver gets its first event within
// about a millisecond; over TCP, or without inotify, at the next backoff
// tick.
//
// Acknowledging costs no commit of its own (see package wal): the spool
// deletes acknowledged events riding on appends, 256 at a time, or, when
// nothing is appended, in batches and after 100 ms idle.
//
// # Knowing the receiver has read an event
//
// A successful write only means the kernel took the bytes. On Linux the
// drainer asks the kernel how much the receiver has not read yet (SIOCOUTQ on
// the socket) and acknowledges once that reaches zero and the receiver has not
// hung up (a dying receiver's queue is freed too, so the hang-up is checked
// second). For TCP, zero means the receiver's kernel has the bytes, not that
// the application read them. Elsewhere, or with Options.AckOnWrite, events are
// acknowledged once written: then events unread in a crashing receiver's
// buffer are lost, as they are without evspool. A receiver that shut down its
// writing side (receive-only) has not hung up: it is delivered to normally.
//
// # The replay window
//
// Read is not handled: cloud-event-proxy reads into a bufio.Scanner and
// handles one line at a time. So an event the receiver has read stays
// spooled until it is known handled. By default (Options.ReplayWindow 0, a
// Unix socket) the window is the receiver's last read: a sequential reader
// reads again only after handling what it read, and a Unix socket frees a
// write's buffer once read whole, so SIOCOUTQ shows its reads a write at a
// time (writes are at most 2 KiB). A positive ReplayWindow keeps that many
// bytes after an event instead (a receiver that hands lines to another
// goroutine). Over TCP, where a read is the receiver's kernel's, only this
// holds: an event read Options.ReplayLinger ago by a receiver still
// connected is handled. If it hangs up before, the events from the oldest
// one not known handled on are resent in order: a
// duplicate, never a loss. Flush returns once its events have left the
// window. Stats.Delivered counts events that left it.
//
// When evspool dies and the receiver lives, the receiver handles what its
// socket held. The drainer notes the receiver's end of the connection, the
// process that reads it (the one process holding that end, not the listener
// SO_PEERCRED names) and the last event written (wal.PeerFile); the next
// Open acknowledges those events if that reader is the same process and has
// closed its end, up to the first line longer than the receiver reads (see
// peer.go and docs/delivery.md, "Handled means proven").
//
// # Poison events
//
// The drainer's decisions are a pure state machine, delivery (delivery.go,
// delivery_window.go, delivery_blame.go), stepped by what happened and the
// time; the drainer is its I/O shell. An event earns a strike only on
// evidence from the failed connection: the receiver handled the event before
// it (after a failure, the next connection resends the newest handled event,
// the witness, then the suspects one at a time) and died on this one; or it
// read part of this one and stopped inside it, or closed the connection
// inside it. Over TCP the suspects go paced, and the receiver's FIN names
// the last one it read (delivery_tcp.go). After Options.MaxAttempts (3)
// strikes, counted across restarts (wal.Strikes), it is appended to the
// dead-letter file in the spool directory (wal.AppendDeadLetter, bytes exact,
// fsync'd), then removed from the spool, counted in Stats.DeadLettered and
// logged once; delivery goes on. A line that makes cloud-event-proxy
// re-execute itself costs at most 4 restarts. A receiver that fails before
// handling anything is crash-looping: no strike, a longer pause before each
// dial, one warning.
//
// # Outages
//
// A receiver that goes away while the connection is idle is noticed when it
// does (the socket becomes readable). An outage logs one warning when it starts, with the error and its
// class (broken_pipe, connection_refused, no_such_socket, timeout,
// permission...), at most one more every 30 s, and one info line when it
// ends with its length and the events held back. A stalled receiver's outage
// starts when it last read, not when its connection was dropped. Something
// other than a socket at a Unix socket's path is a wrong path, not an
// outage: one error line (not_a_socket), however long it lasts.
//
// # Slow and frozen receivers
//
// Every write has a deadline (Options.WriteTimeout). When it fires, or the
// receiver reads nothing for as long, the receiver is stalled: logged
// (rate-limited) and counted. After Options.StallTimeout (30 s) it is frozen:
// an outage. Either way it keeps its connection and nothing new is written
// until it reads again: a receiver that reads connections side by side
// (cloud-event-proxy does) would read a new connection's events beside the
// old connection's queue, out of order. The connection is abandoned only
// when the receiver stopped inside a line (it cannot read it) or hung up.
//
// # Fitting into a daemon
//
// Options.Preamble is called on every new connection before anything
// spooled is sent on it, with a context that ends with the emitter: it may
// wait (for the receiver to replay its state) and write lines, such as
// "CMD LIVE_START", that are never spooled or echoed. A failing preamble
// fails the connection (counted, logged, redialled after a backoff).
//
// Hold and Release are a live gate: while held, nothing more is written
// to the receiver, the connection is kept and events keep spooling; at
// Release delivery resumes, after the preamble is written again if
// Options.PreambleOnRelease is set (the receiver replayed its state and
// must hear the marker before live lines). Options.MaxHold bounds a hold.
// Close returns promptly with the gate shut.
//
// Emitter.Writer returns an io.Writer that splits what is written into
// lines, one event each, so a child process's stdout or fmt.Fprintf call
// sites can feed the emitter unchanged. Each Writer keeps its own partial
// line; Close emits a last line that has no newline. A line over
// MaxEventSize is refused whole, never cut.
//
// Options.MaxAge drops, unsent, an event older than it when its turn to be
// sent comes; it is counted (Stats.Expired for this process, and in the
// spool file across restarts, Stats.Spool.Expired) and delivery goes on in
// order. Ages are on the boot clock within a boot, so wall-clock steps
// neither expire fresh events nor pass stale ones; across a reboot they fall
// back to the wall clock (see Options.MaxAge).
//
// Every loss is counted the same way, whatever caused it: not spooled (disk
// full), refused (over MaxEventSize, not a line), dropped, expired,
// dead-lettered, unreadable in a damaged spool file. Each is in Stats.Lost
// (by kind: Stats.LostByKind), logged and exported as a metric. Every loss
// is reported by some process: drops, expiries, refusals and unreadable
// events are counted in the spool with how much of each was logged, so a
// process killed before it logged its losses has them reported (and
// counted) by the next Open ("the previous run dropped 29 events and did
// not report it"). A stdout
// that fails (its reader went away) is counted (Stats.EchoErrors) and
// logged once; spooling and delivery go on.
//
// Alive and Ready back liveness and readiness probes (package
// emitter/metrics serves them over HTTP): Alive fails when the drainer has
// stopped or has not moved for twice StallTimeout (waiting in the preamble
// is not counted), Ready when the emitter is closed, the spool lost its file,
// or the last commit failed.
//
// # Torn lines
//
// A receiver that reads with a bufio.Scanner (cloud-event-proxy does) hands
// a partial last line to its handler at EOF and on a read error alike, so a
// write cut short mid-line and then closed delivers a torn event, and no
// reset takes back bytes already in the receiver's queue. The drainer
// writes in chunks that end at a line's end, and writes a chunk only once
// the socket's send buffer can take it whole (SO_MEMINFO on Linux), so each
// write(2) takes all of it or, past its deadline, nothing. When Close, or a
// stall past StallTimeout, abandons a write, the receiver has whole lines
// only, on TCP (which accepts partial writes) as on Unix sockets. A line
// larger than the send buffer can ever take (over about 200 KiB) raises
// SO_SNDBUF, and past what the kernel allows it is written once the queue is
// empty, and can still be torn.
//
// # Close, Flush, and what was lost
//
// Close returns by the time its context ends, whatever the drainer is doing;
// a second Close waits for the first and returns its result. Emit after
// Close still echoes the events (Stdout always gets them) and returns
// ErrClosed. Flush returns once the events it waited for have left the spool,
// whether delivered, dropped by the full-spool policy, expired or
// dead-lettered, and says which with a *FlushError when not all were
// delivered. Stats.Lost counts what this process lost since Open: not
// spooled, dropped, expired, dead-lettered. OpenContext cancels the start-up
// scan of a large spool.
//
// # Faults
//
// If the spool cannot commit (disk full, I/O error) the event is still echoed,
// the failure counted, logged (rate-limited, with reason=disk_full when it is)
// and returned. A damaged spool is salvaged at Open, or when the drainer meets
// a damaged record, and logged; the events it could not read are counted as
// lost (Stats.Unreadable), in the spool file too.
package emitter
