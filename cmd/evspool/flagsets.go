package main

import (
	"flag"
	"time"

	"github.com/evspool/evspool/cmd/evspool/internal/demo"
)

// The flag sets of inspect, sink and demo, built apart from their commands so
// that the docs test parses the command lines of README.md and docs/ with
// the very flags the commands parse (run and exec share runFlags.register).

// registerExec adds the flags only exec has to fs: --receiver-to-stdin.
func registerExec(fs *flag.FlagSet) (toStdin *bool) {
	return fs.Bool("receiver-to-stdin", false,
		"write the lines the receiver writes to COMMAND's stdin (instead of evspool's stdin), but for the requests --state-request answers; "+
			"lines COMMAND is too slow to take are dropped and counted, never stalling delivery")
}

type inspectOpts struct {
	dir                      *string
	asJSON, deadLetters, raw *bool
	dump                     *int
}

func inspectFlagSet() (*flag.FlagSet, inspectOpts) {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	return fs, inspectOpts{
		dir:         fs.String("spool", "", "spool directory; required"),
		asJSON:      fs.Bool("json", false, "print one JSON object instead of a table"),
		dump:        fs.Int("dump", 0, "also print the oldest N pending events"),
		deadLetters: fs.Bool("dead-letters", false, "list the events set aside in DIR/dead-letters instead"),
		raw:         fs.Bool("raw", false, "with --dead-letters: print only their bytes, one a line (to re-inject)"),
	}
}

type sinkOpts struct {
	socket, network, outPath *string
}

func sinkFlagSet() (*flag.FlagSet, sinkOpts) {
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	return fs, sinkOpts{
		socket:  fs.String("socket", "", "socket path to listen on (or host:port with --network tcp); required"),
		network: fs.String("network", "unix", "unix or tcp"),
		outPath: fs.String("out", "", "append lines to this file instead of stdout"),
	}
}

type demoOpts struct {
	dur     *time.Duration
	rate    *int
	verbose *bool
}

func demoFlagSet() (*flag.FlagSet, demoOpts) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	dur := demo.DefaultDuration
	fs.Var(durationFlag{&dur}, "duration", "how long events are produced; the faults happen at fixed fractions of it")
	return fs, demoOpts{
		dur:     &dur,
		rate:    fs.Int("rate", demo.DefaultRate, "events produced per second"),
		verbose: fs.Bool("verbose", false, "show the evspool children's logs on stderr"),
	}
}
