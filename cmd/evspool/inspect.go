package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

const inspectHelp = `Usage: evspool inspect --spool DIR [--json] [--dump N]
       evspool inspect --spool DIR --dead-letters [--raw]

Shows a spool without changing it: pending events and bytes, the file's size,
the oldest and newest sequence numbers, how long the oldest event has waited,
and the events lost, by kind: dropped by the full-spool policy, expired,
refused (over --max-event-size), unreadable in a damaged spool file (what a
salvage could not recover), dead-lettered, and not spooled (disk full: the
last run's count, from its status). --dump N also prints the oldest N
pending events, without removing them.

Events the receiver kept failing on (it died, or stopped reading, on them
--max-attempts times, 3 by default) are set aside in DIR/dead-letters so that delivery goes on;
inspect counts them, and --dead-letters lists them (seq, when spooled, when
set aside, bytes). --dead-letters --raw prints only their bytes, one event a
line, to re-inject them once the receiver is fixed:
  evspool inspect --spool DIR --dead-letters --raw | evspool run --socket PATH --spool DIR2
(then remove DIR/dead-letters yourself; inspect never changes anything).

A spool that a running evspool holds is locked; inspect then says so and shows
the status that evspool keeps beside the spool (DIR/status.json, written
when it changes) with its age. inspect never keeps 'evspool run' from starting: it
holds no lock of the spool while it reads, and if a run takes the spool
meanwhile it stops reading and shows that run's status (waiting up to 3 s for
its first). A damaged spool is reported as such (the next
'evspool run' on it moves the damaged file aside and salvages what it can). A
spool file that cannot be read (an I/O error that outlasts the retries 'run'
would make too) is not called damaged: the next 'evspool run' retries the
read and, if it still fails, stops without salvaging.

Exit status: 0 shown (stopped spool, or running with a status to show);
1 no spool, a damaged or unreadable spool, or a locked one without a readable status;
2 bad usage.

Examples:
  evspool inspect --spool /var/lib/evspool/spool
  evspool inspect --spool /var/lib/evspool/spool --json | jq .pending_events
  evspool inspect --spool /var/lib/evspool/spool --dump 20
  evspool inspect --spool /var/lib/evspool/spool --dead-letters
`

// report is what inspect shows, as a table or as JSON.
type report struct {
	Spool string `json:"spool"`
	// State is "stopped" (read from the spool file) or "in_use" (locked by
	// a running evspool; the figures are from its status file).
	State string `json:"state"`
	figures
	// NotSpooledEvents are the events the running process, or the last
	// run, echoed but could not spool (disk full, I/O error): from its
	// status, as the spool could not record them.
	NotSpooledEvents uint64 `json:"not_spooled_events"`
	// DeadLetteredEvents are the events in the dead-letter file.
	DeadLetteredEvents uint64 `json:"dead_lettered_events"`
	// Status is the running process's status, or the last run's.
	Status           *status       `json:"status,omitempty"`
	StatusAgeSeconds *float64      `json:"status_age_seconds,omitempty"`
	Events           []dumpedEvent `json:"events,omitempty"`
	// DeadLetters summarizes the dead-letter file, if there is one.
	DeadLetters *deadLetterSummary `json:"dead_letters,omitempty"`
}

// dumpedEvent is one pending event shown by --dump.
type dumpedEvent struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Data string    `json:"data"`
}

func inspectCmd(args []string, e *env) int {
	fs, o := inspectFlagSet() // flagsets.go
	dir, asJSON, dump, deadLetters, raw := o.dir, o.asJSON, o.dump, o.deadLetters, o.raw
	if done, code := parseFlags(fs, args, e, inspectHelp); done {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(e, "inspect", "unexpected argument %q", fs.Arg(0))
	case *dir == "":
		return usageErr(e, "inspect", "--spool is required")
	case *dump < 0:
		return usageErr(e, "inspect", "--dump must be 0 or more, not %d", *dump)
	case *raw && !*deadLetters:
		return usageErr(e, "inspect", "--raw goes with --dead-letters")
	case *deadLetters && (*asJSON || *dump > 0):
		// The dead-letter list is text or, with --raw, bytes: a flag it
		// would ignore is refused.
		return usageErr(e, "inspect", "--dead-letters lists the dead letters as text (or their bytes with --raw): leave out --json and --dump")
	}
	if *deadLetters {
		if err := printDeadLetters(e.stdout, *dir, *raw); err != nil {
			fmt.Fprintf(e.stderr, "evspool inspect: %v\n", err)
			return exitFatal
		}
		return exitOK
	}
	rep, err := inspect(*dir, *dump)
	if err != nil {
		fmt.Fprintf(e.stderr, "evspool inspect: %v\n", err)
		return exitFatal
	}
	rep.DeadLetters = summarizeDeadLetters(*dir)
	if rep.DeadLetters != nil {
		rep.DeadLetteredEvents = uint64(rep.DeadLetters.Events)
	}
	if rep.Status != nil {
		rep.NotSpooledEvents = rep.Status.SpoolErrors
	}
	if *asJSON {
		err = printJSON(e.stdout, rep)
	} else {
		err = printTable(e.stdout, rep, *dump)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "evspool inspect: %v\n", err)
		return exitFatal
	}
	return exitOK
}

// inspect reads the spool in dir, or the status of the process that holds
// it. A process that has just taken the spool (inspect gave way to it) has
// no status yet, or only an older run's: inspect tries again, the spool or
// the status, for up to liveWait.
func inspect(dir string, dump int) (*report, error) {
	deadline := time.Now().Add(liveWait)
	gaveWay := false
	for {
		rep, err := inspectOnce(dir, dump, &gaveWay)
		var nl *notLiveError
		if !errors.As(err, &nl) || time.Now().After(deadline) {
			if nl != nil && gaveWay {
				err = fmt.Errorf("an evspool took the spool at %s while inspect read it, and has not written its status yet "+
					"(its start-up scan of a large spool can take a while): inspect again in a few seconds", dir)
			}
			return rep, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inspectOnce reads the spool, or the status if it is locked; gaveWay is set
// when inspect stopped reading for a process that took the spool.
func inspectOnce(dir string, dump int, gaveWay *bool) (*report, error) {
	st, entries, lost, err := ledger.Inspect(dir, dump)
	now := time.Now()
	switch {
	case errors.Is(err, wal.ErrLocked):
		*gaveWay = *gaveWay || errors.Is(err, wal.ErrGaveWay)
		return inspectLive(dir, now)
	case errors.Is(err, wal.ErrCorrupt):
		return nil, fmt.Errorf("the spool at %s is damaged: %w; the next 'evspool run' on it moves the damaged file aside and salvages what is readable", dir, err)
	case errors.Is(err, wal.ErrUnsafeFile):
		return nil, fmt.Errorf("%w; the next 'evspool run' on %s stops with this error, and salvages nothing", err, dir)
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("no spool in %s (no spool.db; an 'evspool run' with this --spool would start an empty one): check --spool", dir)
	case readFailed(err):
		// Not damage: wal.Inspect tried again as Open does, and
		// pread(2) failed too (or the file could not be opened).
		return nil, fmt.Errorf("the spool file in %s could not be read, which is not damage: the next 'evspool run' on it tries the read again and, "+
			"if it still fails, stops and salvages nothing: %w", dir, err)
	case err != nil:
		return nil, err
	}
	rep := &report{Spool: dir, State: "stopped", figures: spoolFigures(st, lost, now)}
	if last, err := readStatus(dir); err == nil {
		rep.Status, rep.StatusAgeSeconds = last, age(last, now)
	}
	for _, en := range entries {
		rep.Events = append(rep.Events, dumpedEvent{Seq: en.Seq, Time: en.Time.UTC(), Data: string(en.Data)})
	}
	return rep, nil
}

// readFailed tells an error of the OS reading the spool file (wal.Inspect
// returns it as it is, not as damage).
func readFailed(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// liveWait is how long inspect tries again when the spool is locked by a
// process with no live status: one that is starting writes its first status
// once its start-up scan is done.
const liveWait = 3 * time.Second

// notLiveError is inspectLive's error when the status is missing or not
// from a running evspool: inspect tries again for a while.
type notLiveError struct{ msg string }

func (e *notLiveError) Error() string { return e.msg }

// inspectLive shows what the running evspool that holds dir last wrote.
func inspectLive(dir string, now time.Time) (*report, error) {
	st, err := readStatus(dir)
	if err != nil {
		return nil, &notLiveError{fmt.Sprintf("the spool at %s is in use by a running evspool, and its status cannot be read (%v); "+
			"try its metrics (evspool run and exec serve them on --metrics-addr), or inspect again once it has stopped", dir, err)}
	}
	if !st.Running || !alive(st.PID) {
		return nil, &notLiveError{fmt.Sprintf("the spool at %s is in use by a running process that keeps no status here "+
			"(the status file is from evspool pid %d, which has stopped): a daemon embedding evspool? "+
			"Use its metrics, or inspect again once it has stopped", dir, st.PID)}
	}
	rep := &report{Spool: dir, State: "in_use", figures: st.figures, Status: st, StatusAgeSeconds: age(st, now)}
	if st.Running && st.OldestAgeSeconds > 0 {
		// The oldest event has aged since the status was written.
		rep.OldestAgeSeconds += *rep.StatusAgeSeconds
	}
	return rep, nil
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func age(st *status, now time.Time) *float64 {
	a := max(now.Sub(st.UpdatedAt).Seconds(), 0)
	return &a
}
