package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/evspool/evspool/cmd/evspool/internal/demo"
)

const demoHelp = `Usage: evspool demo [--duration D] [--rate N] [--verbose]

A self-contained run on temporary paths (removed afterwards), about 12 s:
real-shaped PTP events go through a real 'evspool run' (this binary, as a
child process) to a receiver, and through a reconnect-only sender (the usual
fix: reconnect with backoff, no spool) to a second receiver. Both receivers
stall, crash and restart at the same moments; the evspool child is SIGKILLed
and restarted twice. The summary shows that every event reached evspool's
receiver, in order, what the reconnect-only sender lost under the same
faults, and how many events arrived twice after which fault (the replay
window resends what the receiver may not have handled).

Exit status: 0 evspool lost nothing; 1 it lost something, or the demo failed;
2 bad usage.

Examples:
  evspool demo
  evspool demo --duration 30s --rate 5000
  evspool demo --verbose          # with the evspool children's logs on stderr
`

func demoCmd(args []string, e *env) int {
	fs, o := demoFlagSet() // flagsets.go
	rate, verbose := o.rate, o.verbose
	if done, code := parseFlags(fs, args, e, demoHelp); done {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(e, "demo", "unexpected argument %q", fs.Arg(0))
	case *o.dur < time.Second || *o.dur > time.Hour:
		return usageErr(e, "demo", "--duration must be between 1s and 1h, not %v", *o.dur)
	case *rate < 10 || *rate > 100_000:
		return usageErr(e, "demo", "--rate must be between 10 and 100000, not %d", *rate)
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(e.stderr, "evspool demo: cannot find this program's path to run it as the emitter: %v\n", err)
		return exitFatal
	}
	var logs io.Writer
	if *verbose {
		logs = e.stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := demo.Run(ctx, demo.Config{Binary: bin, Duration: *o.dur, Rate: *rate, Out: e.stdout, Logs: logs})
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(e.stderr, "evspool demo: interrupted; its temporary files are removed")
		return exitFatal
	case err != nil:
		fmt.Fprintf(e.stderr, "evspool demo: %v\n", err)
		return exitFatal
	}
	if !sum.OK() {
		return exitFatal
	}
	return exitOK
}
