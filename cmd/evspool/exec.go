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
	"path/filepath"
	"syscall"
	"time"
)

const execHelp = `Usage: evspool exec [run flags] -- COMMAND [ARG...]

Runs COMMAND and forwards each line it writes to stdout as 'evspool run' does:
committed to the spool, echoed to evspool's stdout, delivered in order. Its
stderr passes through to evspool's stderr, its stdin is evspool's.

SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are forwarded to COMMAND's
process group: COMMAND runs in a group of its own (so a Ctrl-C reaches it
once, through evspool, and its children get it too). The final kill kills
the group, and what is left of it when COMMAND exits is killed: no child of
COMMAND outlives evspool. A stdout reader that goes away does not stop
delivery (see 'evspool run --help').
evspool keeps reading until COMMAND exits, then delivers what is spooled and
exits with COMMAND's status: its exit code, or 128+N if signal N killed it.
It waits for delivery until the spool is empty or --drain-timeout passes.
Events still spooled then (logged as a warning) stay for the next run on the
spool; the status stays COMMAND's.

After a SIGINT/SIGTERM evspool exits within 2 s whatever COMMAND does: it
stops reading COMMAND's stdout after 0.6 s, kills COMMAND's group if it has not
exited after 0.8 s, and delivers until 1.1 s; what was read is committed. A
second SIGINT/SIGTERM is forwarded too and cuts every wait short. One during
the start-up scan of a large spool stops it: COMMAND is not started, exit 3.

Under a systemd unit of Type=notify (NOTIFY_SOCKET set) evspool reports
READY=1 once the spool is open and COMMAND started, its figures (pending,
connected, delivered, lost) as STATUS= every 2 s, WATCHDOG=1 only while its
drainer moves (WatchdogSec=), and STOPPING=1 at SIGTERM. COMMAND does not
inherit NOTIFY_SOCKET. See 'man evspool' for the packaged unit.

exec runs its Go code on one processor (GOMAXPROCS=1) unless the environment
sets GOMAXPROCS; COMMAND's environment is left as it was.

Exit status: COMMAND's, except 4 where COMMAND exited 0 but events were lost
(echoed but not spooled, refused, dropped by --on-full, expired,
dead-lettered, unreadable in a damaged spool file; the final log line gives
the counts): a loss never exits 0; 5 where COMMAND exited 0 and nothing was
lost, but some events were acknowledged without proof that the receiver
handled them (--network tcp: its kernel took them). 127 if COMMAND was
not found, 126 if it could not be started; 1 if the spool could not be
opened (COMMAND is then not started); 2 bad usage.

Examples:
  evspool exec --socket /run/cloud-native/events.sock --spool /var/lib/evspool/spool -- ptp4l -f /etc/ptp4l.conf -m
  evspool exec --socket /run/events.sock --spool /tmp/spool --drain-timeout 10s -- ./emit-events.sh
  evspool exec --socket /run/events.sock --spool /tmp/spool --metrics-addr :9477 -- phc2sys -a -r -m
`

const (
	exitNotFound    = 127 // COMMAND not found, as shells do
	exitCannotStart = 126 // COMMAND found but not startable, as shells do
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
	toStdin := registerExec(fl)
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
	oneProc() // COMMAND gets the environment as it was: GOMAXPROCS is not set for it
	defer ignoreSIGPIPE()()
	var childStdin *os.File // the read end COMMAND gets; evspool closes its copy once COMMAND started
	if *toStdin {
		pr, pw, err := os.Pipe()
		if err != nil {
			fmt.Fprintf(e.stderr, "evspool exec: cannot make a pipe for COMMAND's stdin: %v\n", err)
			return exitFatal
		}
		defer pw.Close()
		rf.onReceive = func(line []byte) { _, _ = pw.Write(append(line, '\n')) } // EPIPE once COMMAND is gone
		e = &env{stdin: pr, stdout: e.stdout, stderr: e.stderr}
		childStdin = pr
		defer pr.Close() // also when COMMAND never started
	}
	sd := startNotifier(logger, "opening the spool "+rf.spool) // systemd, see notify.go
	defer sd.close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	f, err := openBeforeStart(sigs, &rf, e, logger, fl.Args())
	if errors.Is(err, errStartCancelled) {
		logger.Info("signal received during start-up: stopping; the command was not started, the spool is as it was")
		return exitSpooled
	}
	if err != nil {
		return openError(e, "exec", err)
	}
	c, err := startChild(fl.Args(), e)
	if childStdin != nil {
		childStdin.Close() // COMMAND has its own: once it exits, a write gets EPIPE instead of blocking
	}
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
	sd.ready(f.em, fmt.Sprintf("%s pid %d", filepath.Base(fl.Arg(0)), c.cmd.Process.Pid))
	return c.supervise(f, sigs, logger, sd.stopping)
}

// openBeforeStart opens the spool before COMMAND starts; a SIGINT/SIGTERM
// meanwhile cancels the start-up (a long scan of a large spool), as for run.
// Other signals have no command to go to yet and are dropped, logged.
func openBeforeStart(sigs <-chan os.Signal, rf *runFlags, e *env, logger *slog.Logger, argv []string) (*forwarder, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-opened:
				return
			case sig := <-sigs:
				if sig == syscall.SIGINT || sig == syscall.SIGTERM {
					cancel()
					return
				}
				logger.Warn("signal received before the command started; dropped", "signal", sig.String())
			}
		}
	}()
	f, err := openForwarderContext(ctx, rf, e.stdout, logger, newStatus(rf, argv))
	close(opened)
	<-watching // sigs is supervise's from here on
	return f, err
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
	cmd.Env = childEnv() // without NOTIFY_SOCKET: see notify.go
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

// stopper tracks the stop signals: the first SIGINT/SIGTERM starts the 2 s
// evspool has to exit, the second one cuts every wait short.
type stopper struct {
	stopped chan struct{} // closed at the first SIGINT/SIGTERM
	hurry   chan struct{} // closed at the second
	at      time.Time     // when the first came; set before stopped is closed
	onStop  func()        // if set, called at the first
}

func newStopper() *stopper {
	return &stopper{stopped: make(chan struct{}), hurry: make(chan struct{})}
}

// by returns a channel closed d after the first stop signal, or at the
// second; it never fires without a stop signal.
func (s *stopper) by(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		select {
		case <-s.stopped:
		case <-s.hurry:
			return
		}
		t := time.NewTimer(time.Until(s.at.Add(d)))
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.hurry:
		}
	}()
	return ch
}

// After a stop signal: reading stops after stopRead, COMMAND is killed if
// it has not exited after stopChild, delivery ends after stopDeliver, and
// Close gets what is left of stopTotal (2 s, the CLI contract, less a margin).
const (
	stopRead    = 600 * time.Millisecond
	stopChild   = 800 * time.Millisecond
	stopDeliver = 1100 * time.Millisecond
	stopTotal   = 1900 * time.Millisecond
)

// supervise forwards signals and the child's lines until it exits, delivers,
// and returns the child's status (4 instead of 0 if events were lost).
// onStop is called at the first stop signal (systemd's STOPPING=1).
func (c *child) supervise(f *forwarder, sigs <-chan os.Signal, logger *slog.Logger, onStop func()) int {
	// c.stdout stays open: after readOutput gave up on it, a reader may still
	// be blocked on it until evspool exits.
	stop := newStopper()
	stop.onStop = onStop
	done := make(chan struct{})
	defer close(done)
	go c.forwardSignals(sigs, stop, done, logger)
	c.readOutput(f, stop, logger)
	c.waitExit(stop, logger)
	code := exitCode(c.state)
	c.reapGroup(logger)
	deliver(f, stop)
	budget := closeBudget
	select {
	case <-stop.stopped:
		budget = min(budget, max(time.Until(stop.at.Add(stopTotal)), 0))
	default:
	}
	st := f.closeWithin(budget)
	switch {
	case st.Lost() > 0:
		logger.Error("command exited; events were lost", append([]any{"exit_status", code}, lossAttrs(st)...)...)
		if code == exitOK {
			code = exitLost // a loss never exits 0
		}
	case st.Pending > 0:
		logger.Warn("command exited; events still spooled, the next run on this spool delivers them",
			"exit_status", code, "pending_events", st.Pending, "delivered", st.Delivered, "lost", 0)
	case st.Unproven > 0:
		logger.Warn("command exited; everything written, but not all known handled: the receiver's kernel took them",
			"exit_status", code, "delivered", st.Delivered, "unproven", st.Unproven, "lost", 0)
		if code == exitOK {
			code = exitUnproven
		}
	default:
		logger.Info("command exited; everything delivered",
			append([]any{"exit_status", code, "delivered", st.Delivered, "lost", 0}, stateAttrs(st)...)...)
	}
	return code
}

// waitExit waits for COMMAND to exit; after a stop signal it gives it until
// stopChild, then kills it.
func (c *child) waitExit(stop *stopper, logger *slog.Logger) {
	select {
	case <-c.exited:
		return
	case <-stop.by(stopChild):
	}
	select {
	case <-c.exited:
		return
	default:
	}
	logger.Warn("the command did not exit after the stop signal; killing it and its process group", "pid", c.cmd.Process.Pid)
	c.killGroup()
	<-c.exited
}

// readOutput forwards the child's stdout until EOF, or until stdoutGrace
// after the child exited (a background process it started may still hold
// its stdout), or stopRead after a stop signal.
func (c *child) readOutput(f *forwarder, stop *stopper, logger *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var grace <-chan time.Time
		exited, stopped := c.exited, stop.by(stopRead)
		for {
			select {
			case <-exited:
				exited, grace = nil, time.After(stdoutGrace)
			case <-grace:
				logger.Warn("command exited but its stdout is still open (a background process?); stopped reading it")
				cancel()
				return
			case <-stopped:
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	f.pump(ctx, c.stdout)
}

// deliver waits for delivery after the child exited: until drained or
// --drain-timeout, cut short by a stop signal; after a stop signal, at most
// until stopDeliver.
func deliver(f *forwarder, stop *stopper) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop.by(stopDeliver):
			cancel()
		case <-ctx.Done():
		}
	}()
	timeout := f.rf.drainTimeout
	select {
	case <-stop.stopped:
		timeout = 0 // the stop bounds it
	default:
	}
	f.drain(ctx, timeout)
}

// forwardSignals passes each signal on to the child while it runs, until
// done. The first SIGINT or SIGTERM, even after the child exited, closes
// stop.stopped; the second closes stop.hurry.
func (c *child) forwardSignals(sigs <-chan os.Signal, stop *stopper, done <-chan struct{}, logger *slog.Logger) {
	stops := 0
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			stopSig := sig == syscall.SIGINT || sig == syscall.SIGTERM
			if stopSig && stops == 0 && stop.onStop != nil {
				// Before the command is signalled: it may exit at once,
				// and evspool deliver and close (the drainer disconnected)
				// before this goroutine runs again, and STOPPING=1 would
				// call a receiver that was connected down (TestNotifyExec,
				// 1 run in 20 under -race).
				stop.onStop()
			}
			select {
			case <-c.exited:
			default:
				logger.Info("forwarding signal to the command's process group", "signal", sig.String(), "pid", c.cmd.Process.Pid)
				c.signalGroup(sig)
			}
			if !stopSig {
				continue
			}
			stops++
			switch stops {
			case 1:
				stop.at = time.Now()
				close(stop.stopped)
			case 2:
				logger.Info("second stop signal: stopping at once")
				close(stop.hurry)
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
