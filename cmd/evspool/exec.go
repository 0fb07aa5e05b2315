package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

const execHelp = `Usage: evspool exec [run flags] -- COMMAND [ARG...]

Runs COMMAND and forwards each line it writes to stdout as 'evspool run' does:
committed to the spool, echoed to evspool's stdout, delivered in order. Its
stderr passes through to evspool's stderr, its stdin is evspool's.

SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded to COMMAND, which
runs in its own process group (so a Ctrl-C reaches it once, through evspool).
evspool keeps reading until COMMAND exits, then delivers what is spooled and
exits with COMMAND's status: its exit code, or 128+N if signal N killed it.
It waits for delivery until the spool is empty or --drain-timeout passes; after
a SIGINT/SIGTERM, at most 1 s more. Events still spooled then (logged as a
warning) stay for the next run on the spool; the status stays COMMAND's.

Exit status: COMMAND's; 127 if COMMAND was not found, 126 if it could not be
started; 1 if the spool could not be opened (COMMAND is then not started);
2 bad usage.

Examples:
  evspool exec --socket /cloud-native/events.sock --spool /var/lib/evspool -- ptp4l -f /etc/ptp4l.conf -m
  evspool exec --socket /run/events.sock --spool /tmp/spool --drain-timeout 10s -- ./emit-events.sh
  evspool exec --socket /run/events.sock --spool /tmp/spool --metrics-addr :9477 -- phc2sys -a -r -m
`

const (
	exitNotFound    = 127 // COMMAND not found, as shells do
	exitCannotStart = 126 // COMMAND found but not startable, as shells do
	// signalDrain bounds delivery after a stop signal ended COMMAND.
	signalDrain = time.Second
	// stdoutGrace is how long evspool keeps reading after COMMAND exited
	// while something it started still holds its stdout open.
	stdoutGrace = time.Second
)

// forwarded are the signals evspool passes on to COMMAND.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

func execCmd(args []string, e *env) int {
	fl := flag.NewFlagSet("exec", flag.ContinueOnError)
	var rf runFlags
	rf.register(fl)
	if done, code := parseFlags(fl, args, e, execHelp); done {
		return code
	}
	if fl.NArg() == 0 {
		return usageErr(e, "exec", "no COMMAND given: put it after --")
	}
	if err := rf.validate(); err != nil {
		return usageErr(e, "exec", "%v", err)
	}
	logger := newLogger(rf.logFormat, rf.logLevel, e.stderr)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	f, err := openForwarder(&rf, e.stdout, logger, newStatus(&rf, fl.Args()))
	if err != nil {
		return openError(e, "exec", err)
	}
	c, err := startChild(fl.Args(), e)
	if err != nil {
		f.close()
		fmt.Fprintf(e.stderr, "evspool exec: cannot run %q: %v\n", fl.Arg(0), err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotStart
	}
	f.status.setChild(c.cmd.Process.Pid)
	logger.Info("command started", "command", fl.Arg(0), "pid", c.cmd.Process.Pid)
	return c.supervise(f, sigs, logger)
}

// child is COMMAND, running, with its stdout read through a pipe.
type child struct {
	cmd    *exec.Cmd
	stdout *os.File
	exited chan struct{} // closed when Wait returned
	state  *os.ProcessState
}

func startChild(argv []string, e *env) (*child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, w, e.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close() // the child holds the write end now; EOF comes when it is done
	if err != nil {
		r.Close()
		return nil, err
	}
	c := &child{cmd: cmd, stdout: r, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	return c, nil
}

// supervise forwards signals and the child's lines until it exits, delivers,
// and returns the child's status.
func (c *child) supervise(f *forwarder, sigs <-chan os.Signal, logger *slog.Logger) int {
	// c.stdout stays open: after readOutput gave up on it, a reader may still
	// be blocked on it until evspool exits.
	stopped := make(chan struct{}) // closed at the first SIGINT/SIGTERM
	done := make(chan struct{})
	defer close(done)
	go c.forwardSignals(sigs, stopped, done, logger)
	c.readOutput(f, logger)
	<-c.exited
	code := exitCode(c.state)
	deliver(f, stopped)
	st := f.close()
	if st.Pending > 0 {
		logger.Warn("command exited; events still spooled, the next run on this spool delivers them",
			"exit_status", code, "pending_events", st.Pending, "delivered", st.Delivered)
	} else {
		logger.Info("command exited; everything delivered", "exit_status", code, "delivered", st.Delivered)
	}
	return code
}

// readOutput forwards the child's stdout until EOF, or until stdoutGrace
// after the child exited: a background process it started may still hold
// its stdout.
func (c *child) readOutput(f *forwarder, logger *slog.Logger) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-c.exited
		select {
		case <-time.After(stdoutGrace):
			stop()
		case <-ctx.Done():
		}
	}()
	if !f.pump(ctx, c.stdout) {
		logger.Warn("command exited but its stdout is still open (a background process?); stopped reading it")
	}
}

// deliver waits for delivery after the child exited: until drained or
// --drain-timeout, cut short by a stop signal; after a stop signal, at most
// signalDrain.
func deliver(f *forwarder, stopped <-chan struct{}) {
	select {
	case <-stopped:
		f.drain(context.Background(), signalDrain)
		return
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	f.drain(ctx, f.rf.drainTimeout)
}

// forwardSignals passes each signal on to the child while it runs, until
// done; the first SIGINT or SIGTERM, even after the child exited, closes
// stopped.
func (c *child) forwardSignals(sigs <-chan os.Signal, stopped chan<- struct{}, done <-chan struct{}, logger *slog.Logger) {
	closed := false
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			select {
			case <-c.exited:
			default:
				logger.Info("forwarding signal to the command", "signal", sig.String(), "pid", c.cmd.Process.Pid)
				_ = c.cmd.Process.Signal(sig)
			}
			if !closed && (sig == syscall.SIGINT || sig == syscall.SIGTERM) {
				closed = true
				close(stopped)
			}
		}
	}
}

// exitCode is the status a shell reports: the exit code, or 128+N for a
// child killed by signal N.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
