// Command evspool is the operator's CLI of evspool: it forwards event lines to
// a receiver over a Unix (or TCP) socket through a durable on-disk spool, so
// that no event is lost when the receiver, or evspool itself, restarts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// Exit codes of the CLI contract: --help and docs/operations.md list them
// (docs_test.go checks the table against these).
const (
	exitOK       = 0 // everything delivered, nothing lost
	exitFatal    = 1 // fatal error
	exitUsage    = 2 // bad command line
	exitSpooled  = 3 // stopped with events still spooled, nothing lost
	exitLost     = 4 // events lost: not spooled, refused, dropped, expired, dead-lettered, unreadable
	exitUnproven = 5 // written, nothing known lost, but some acknowledged without proof of handling (TCP)
)

// version is set at build time with -ldflags "-X main.version=...";
// otherwise it is the module's version when installed with go install, or
// "dev".
var version = "dev"

func init() {
	if bi, ok := debug.ReadBuildInfo(); ok && version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
}

type command struct {
	name, summary string
	run           func(args []string, env *env) int
}

// env is what a command talks to: the process's streams, swapped in tests.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func commands() []command {
	return []command{
		{"run", "read events from stdin and deliver them durably", runCmd},
		{"exec", "run a command and deliver its stdout lines durably", execCmd},
		{"sink", "a receiver that prints every line it is sent", sinkCmd},
		{"inspect", "show a spool's pending events, size and drops", inspectCmd},
		{"demo", "show events surviving receiver and evspool crashes", demoCmd},
	}
}

func main() {
	os.Exit(realMain(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}))
}

func realMain(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintf(e.stdout, "evspool %s (%s)\n", version, runtime.Version())
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], e)
		}
	}
	fmt.Fprintf(e.stderr, "evspool: unknown command %q (see evspool --help)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `evspool forwards event lines to a receiver's socket through a durable spool:
events survive a restart of the receiver and of evspool itself.

Usage:
  evspool <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Examples:
  evspool demo
  ptp4l -f /etc/ptp4l.conf -m | evspool run --socket /run/cloud-native/events.sock --spool /var/lib/evspool/spool
  evspool exec --socket /run/cloud-native/events.sock --spool /var/lib/evspool/spool -- ptp4l -f /etc/ptp4l.conf -m
  evspool inspect --spool /var/lib/evspool/spool
  evspool sink --socket /tmp/events.sock

Exit status of run: 0 everything delivered, nothing lost; 3 stopped with events
still spooled, nothing lost; 4 events lost (not spooled, refused, dropped,
expired, dead-lettered, unreadable in a damaged spool); 5 everything written,
nothing known lost, but some acknowledged without proof that the receiver
handled them (--network tcp); 1 fatal; 2 bad usage. exec exits with COMMAND's
status, 4 instead of 0 if events were lost, 5 instead of 0 if some were
acknowledged without proof. A loss never exits 0.

Sizes take KiB/MiB/GiB or KB/MB/GB (64MiB, 1GB); durations 500ms, 5s, 1m30s.
Run 'evspool <command> --help' for a command's flags and examples, and
'evspool --version' for the version.
`)
}

// parseFlags parses args, printing help to stdout on --help and a one-line
// error on a bad flag. It returns (done, code): done means exit with code.
func parseFlags(fs *flag.FlagSet, args []string, e *env, help string) (bool, int) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(e.stdout, help)
		fs.SetOutput(e.stdout)
		fmt.Fprintln(e.stdout, "\nFlags:")
		fs.PrintDefaults()
		return true, exitOK
	case err != nil:
		fmt.Fprintf(e.stderr, "evspool %s: %v (see evspool %s --help)\n", fs.Name(), err, fs.Name())
		return true, exitUsage
	}
	return false, 0
}

func usageErr(e *env, cmd, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "evspool %s: %s (see evspool %s --help)\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}
