package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/evspool/evspool/emitter"
)

const runHelp = `Usage: evspool run --socket PATH --spool DIR [flags]

Reads events from stdin, one per line. Each event is committed to the spool,
then echoed to stdout (so every echoed line is durable), then delivered in
order to the receiver at --socket. At end of input it keeps delivering until
the spool is empty or --drain-timeout passes.

Exit status: 0 everything delivered; 3 stopped with events still spooled (the
next run on the same spool delivers them); 1 fatal error; 2 bad usage.
SIGINT/SIGTERM: stop reading, commit what was read, exit 0 or 3 within 2 s.

Examples:
  ptp4l -f /etc/ptp4l.conf -m 2>&1 | evspool run --socket /cloud-native/events.sock --spool /var/lib/evspool
  evspool run --socket 127.0.0.1:9043 --network tcp --spool /tmp/spool --max-spool-size 1GiB --on-full drop-newest
  evspool run --socket /run/events.sock --spool /tmp/spool --drain-timeout 30s < events.txt
`

// closeBudget bounds Close at exit so a signal is honoured within 2 s.
const closeBudget = time.Second

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return forward(ctx, e, &rf, logger)
}

// forward runs the emitter over the lines of e.stdin until end of input and
// drain, or until ctx ends (a signal). It returns the exit code.
func forward(ctx context.Context, e *env, rf *runFlags, logger *slog.Logger) int {
	opts := rf.emitterOptions(logger)
	opts.Stdout = e.stdout
	em, err := emitter.Open(rf.socket, rf.spool, opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "evspool: %v\n", err)
		return exitFatal
	}
	lines := make(chan [][]byte, 4)
	go readLines(e.stdin, int(rf.maxEvent), lines, logger)
	eof := pump(ctx, em, lines, logger)
	if eof {
		drainCtx, cancel := ctx, context.CancelFunc(func() {})
		if rf.drainTimeout > 0 {
			drainCtx, cancel = context.WithTimeout(ctx, rf.drainTimeout)
		}
		if err := em.Flush(drainCtx); err != nil {
			logger.Warn("stopped before everything was delivered", "error", err)
		}
		cancel()
	} else {
		logger.Info("signal received: stopping")
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	if err := em.Close(closeCtx); err != nil {
		logger.Error("close", "error", err)
	}
	return exitStatus(em.Stats(), logger)
}

// pump emits each batch of lines. It returns true at end of input, false when
// ctx ended first; then the lines already read are still committed.
func pump(ctx context.Context, em *emitter.Emitter, lines <-chan [][]byte, logger *slog.Logger) bool {
	emit := func(ctx context.Context, batch [][]byte) {
		// The emitter counts and logs spool failures; the lines were echoed.
		_ = em.Emit(ctx, batch...)
	}
	for {
		select {
		case batch, ok := <-lines:
			if !ok {
				return true
			}
			emit(ctx, batch)
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			for {
				select {
				case batch, ok := <-lines:
					if !ok {
						return false
					}
					emit(last, batch)
				default:
					return false
				}
			}
		}
	}
}

func exitStatus(st emitter.Stats, logger *slog.Logger) int {
	if st.SpoolErrors > 0 {
		logger.Error("some events were echoed but could not be spooled, so were not delivered", "events", st.SpoolErrors)
	}
	if st.Pending > 0 {
		logger.Info("stopped with events still spooled; the next run on this spool delivers them",
			"pending_events", st.Pending, "delivered", st.Delivered)
		return exitSpooled
	}
	logger.Info("everything delivered", "delivered", st.Delivered, "dropped", st.Dropped)
	return exitOK
}
