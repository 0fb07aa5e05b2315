package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/evspool/evspool/internal/refrecv"
)

const sinkHelp = `Usage: evspool sink --socket PATH [--out FILE] [--network unix|tcp]

A receiver like cloud-event-proxy's: listens on --socket, accepts many
connections at once, reads each one line at a time (lines up to 64 KiB) and
prints every line to stdout, or appends it to --out. Stops on SIGINT/SIGTERM.

Examples:
  evspool sink --socket /tmp/events.sock
  evspool sink --socket 127.0.0.1:9043 --network tcp --out received.txt
`

func sinkCmd(args []string, e *env) int {
	fs, o := sinkFlagSet() // flagsets.go
	socket, network, outPath := o.socket, o.network, o.outPath
	if done, code := parseFlags(fs, args, e, sinkHelp); done {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(e, "sink", "unexpected argument %q", fs.Arg(0))
	case *socket == "":
		return usageErr(e, "sink", "--socket is required")
	case *network != "unix" && *network != "tcp":
		return usageErr(e, "sink", "--network must be unix or tcp, not %q", *network)
	}
	var out io.Writer = e.stdout
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(e.stderr, "evspool sink: %v\n", err)
			return exitFatal
		}
		defer f.Close()
		out = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := newLogger("text", "info", e.stderr)
	rcv, err := refrecv.Start(*network, *socket, &refrecv.Options{Out: out, CountOnly: true, Logger: logger})
	if err != nil {
		fmt.Fprintf(e.stderr, "evspool sink: %v\n", listenError(*network, *socket, err))
		return exitFatal
	}
	logger.Info("listening", "network", *network, "addr", rcv.Addr())
	<-ctx.Done()
	rcv.Close()
	logger.Info("stopped", "lines", rcv.Count())
	return exitOK
}

// listenError says why sink cannot listen on addr, in the operator's terms:
// a socket's directory that does not exist is named, with the command that
// creates it; otherwise the system's own reason.
func listenError(network, addr string, err error) error {
	if network == "unix" {
		dir := filepath.Dir(addr)
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("cannot listen on %s: the directory %s does not exist: create it (mkdir -p %s) or give a --socket in a directory that exists", addr, dir, dir)
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, addr+": "); i >= 0 {
		msg = msg[i+len(addr)+2:] // the receiver's own prefix (its internal package's name) says nothing here
	}
	return fmt.Errorf("cannot listen on %s %s: %s", network, addr, msg)
}
