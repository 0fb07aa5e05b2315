package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/evspool/evspool/emitter"
)

const runHelp = `Usage: evspool run --socket PATH --spool DIR [flags]

Reads events from stdin, one per line. Each event is committed to the spool,
then echoed to stdout (so every echoed line is durable), then delivered in
order to the receiver at --socket. At end of input it keeps delivering until
the spool is empty or --drain-timeout passes.

While it runs it keeps DIR/status.json up to date (written when it changes), which
'evspool inspect' shows. Started with more than 10,000 events spooled, it logs
the replay's progress every 5 s until the backlog is delivered.

An event the receiver has read stays spooled until it is known handled (a
receiver reads ahead of what it handles): if it hangs up before, the event is
resent. By default (--replay-window last-read) only what the receiver's last
read held is kept, since a receiver that reads, handles every line, then reads
again (cloud-event-proxy) can only have that unhandled; give a size for a
receiver that hands lines to another goroutine. An event read --replay-linger
ago by a receiver still connected is handled, so at end of input run waits up
to --replay-linger after the last read before it reports everything
delivered. An event the receiver is shown to fail on (it handled the event
before it, then died on it or stopped inside it) is set aside in
DIR/dead-letters after --max-attempts such failures, counted across restarts
(see 'evspool inspect --dead-letters'). A receiver that reads nothing keeps
its connection; one that dies before handling anything is dialled less often.

Under a systemd unit of Type=notify it reports to systemd as exec does (see
'evspool exec --help').

Exit status:
  0  everything delivered, nothing lost
  3  stopped with events still spooled, nothing lost (the next run on the
     same spool delivers them)
  4  events lost: echoed but not spooled (disk full, file size limit, I/O
     error), refused (a line over --max-event-size), dropped by --on-full,
     expired, dead-lettered, or unreadable in a damaged spool file (what its
     salvage could not recover); whether or not some are still spooled. The
     final log line gives the counts by kind; losses a killed run left
     unreported are reported, and counted, by the next run.
  5  everything written, nothing known lost, but some acknowledged without
     proof that the receiver handled them (--network tcp: its kernel took
     them; nothing shows its application read them)
  1  fatal error
  2  bad usage
A stdout reader that goes away (run ... | head -1) does not change the
status: the echo failure is counted and logged once, delivery goes on.
SIGINT/SIGTERM, at any moment (start-up scan included) and whatever stdin
does: stop reading, commit what was read, exit within 2 s (3, or 4 if
something was lost). A second SIGINT/SIGTERM ends evspool at once; what was
committed stays spooled.

On Linux a pipe or socket on stdin is read with O_NONBLOCK set, through Go's
poller (less CPU a line). The flag is the pipe's, shared by every process
that holds it: run puts it back as it found it when it ends and at the first
SIGINT/SIGTERM; killed with SIGKILL, it leaves it set. A terminal, a file, or
a socket that is stdout too is read as it is (see docs/operations.md, run).

run runs its Go code on one processor (GOMAXPROCS=1) unless the environment
sets GOMAXPROCS.

Examples:
  ptp4l -f /etc/ptp4l.conf -m 2>&1 | evspool run --socket /run/cloud-native/events.sock --spool /var/lib/evspool/spool
  evspool run --socket 127.0.0.1:9043 --network tcp --spool /tmp/spool --max-spool-size 1GiB --on-full drop-newest
  evspool run --socket /run/events.sock --spool /tmp/spool --drain-timeout 30s < events.txt
  evspool run --socket /run/events.sock --spool /tmp/spool --metrics-addr 127.0.0.1:9477 --log-format json
`

func runCmd(args []string, e *env) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var rf runFlags
	rf.register(fs)
	if done, code := parseFlags(fs, args, e, runHelp); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(e, "run", "unexpected argument %q", fs.Arg(0))
	}
	if err := rf.validate(); err != nil {
		return usageErr(e, "run", "%v", err)
	}
	logger := newLogger(rf.logFormat, rf.logLevel, e.stderr)
	oneProc()
	defer ignoreSIGPIPE()()
	sd := startNotifier(logger, "opening the spool "+rf.spool) // systemd, see notify.go
	defer sd.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdin, restoreStdin := e.stdin, func() {}
	if e.stdin == io.Reader(os.Stdin) {
		stdin, restoreStdin = pollStdin()
	}
	defer restoreStdin()
	// After the first signal the default handling is back: a second one
	// ends evspool at once, with what is committed. stdin's flags are put
	// back first, as no handler runs then.
	context.AfterFunc(ctx, func() { restoreStdin(); stop() })
	// A signal, not the return below, tells systemd STOPPING=1 (sent
	// before evspool exits).
	told := make(chan struct{})
	unhook := context.AfterFunc(ctx, func() { sd.stopping(); close(told) })
	defer func() {
		if !unhook() {
			<-told
		}
	}()
	f, err := openForwarderContext(ctx, &rf, e.stdout, logger, newStatus(&rf, nil))
	if errors.Is(err, errStartCancelled) {
		logger.Info("signal received during start-up: stopping; nothing was read, the spool is as it was")
		return exitSpooled
	}
	if err != nil {
		return openError(e, "run", err)
	}
	sd.ready(f.em, "")
	if f.pump(ctx, stdin) {
		f.drain(ctx, rf.drainTimeout)
	} else {
		logger.Info("signal received: stopped reading; what was read is committed")
	}
	if ctx.Err() != nil {
		// STOPPING=1 carries the figures from before the close below
		// disconnects the drainer: it is sent from another goroutine.
		<-told
	}
	return exitStatus(f.close(), logger)
}

// exitStatus logs the final figures in one line and returns the status that
// tells the truth: 4 if anything was lost, else 3 if events are still
// spooled, else 5 if some were acknowledged without proof of handling,
// else 0.
func exitStatus(st emitter.Stats, logger *slog.Logger) int {
	if lost := st.Lost(); lost > 0 {
		logger.Error("events were lost", lossAttrs(st)...)
		return exitLost
	}
	if st.DeadLettered > 0 {
		logger.Error("some events were set aside in the dead-letter file, not delivered", "events", st.DeadLettered)
	}
	if st.Pending > 0 {
		logger.Info("stopped with events still spooled; the next run on this spool delivers them",
			append([]any{"pending_events", st.Pending, "delivered", st.Delivered, "unproven", st.Unproven, "lost", 0}, stateAttrs(st)...)...)
		return exitSpooled
	}
	if st.Unproven > 0 {
		logger.Warn("everything written, but not all known handled: the receiver's kernel took them, nothing shows its application read them",
			"delivered", st.Delivered, "unproven", st.Unproven, "lost", 0)
		return exitUnproven
	}
	logger.Info("everything delivered", append([]any{"delivered", st.Delivered, "lost", 0}, stateAttrs(st)...)...)
	return exitOK
}

// lossAttrs are the final log line's figures when events were lost: the
// total and each kind (inspect shows the spool's totals of the same kinds).
func lossAttrs(st emitter.Stats) []any {
	l := st.LostByKind()
	return []any{"lost", l.Total(),
		"not_spooled", l.NotSpooled,
		"dropped", l.Dropped,
		"expired", l.Expired,
		"dead_lettered", l.DeadLettered,
		"refused", l.Refused,
		"unreadable", l.Unreadable,
		"pending_events", st.Pending,
		"delivered", st.Delivered,
		"unproven", st.Unproven}
}

// stateAttrs are the final line's figures of the state and of what the
// receiver wrote, where there were any: the state's lines are not
// deliveries.
func stateAttrs(st emitter.Stats) []any {
	if st.StateWrites == 0 && st.ReceivedLines == 0 {
		return nil
	}
	return []any{"state_writes", st.StateWrites, "state_lines", st.StateLines, "state_keys", st.Spool.StateKeys,
		"receiver_lines", st.ReceivedLines, "state_requests", st.StateRequests}
}

// oneProc runs evspool run's and exec's Go code on one processor
// (GOMAXPROCS=1) unless the environment sets GOMAXPROCS: each is a pipeline
// of goroutines that wait on a system call (read the input, commit, write
// the socket), and with a second processor every line wakes a second thread
// that finds nothing to do. bench/README.md (cli-cost, e2e) has what it
// saves and what it costs.
func oneProc() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
