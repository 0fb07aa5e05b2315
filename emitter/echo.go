package emitter

import (
	"errors"
	"io"
	"syscall"
)

// echoFailed counts a failed echo write and says so once: stdout is a local
// record, so its reader going away stops nothing else. (A broken stdout
// pipe kills a process that does not ignore SIGPIPE; the CLI ignores it.)
// The caller holds echoMu.
func (e *Emitter) echoFailed(err error) {
	e.echoErrors.Add(1)
	if e.echoWarned {
		return
	}
	e.echoWarned = true
	msg := "stdout write failed: events are still spooled and delivered, not echoed while it fails"
	if errors.Is(err, syscall.EPIPE) {
		msg = "stdout reader went away: events are still spooled and delivered, no longer echoed"
	}
	e.opts.Logger.Warn(msg, "error", err.Error(), "metric", "evspool_echo_errors_total")
}

// writeEcho writes events to Options.Stdout, one a line.
func (e *Emitter) writeEcho(events [][]byte) {
	if e.opts.Stdout == io.Discard {
		return // nothing to write: no lock for 64 callers to queue on
	}
	e.echoMu.Lock()
	defer e.echoMu.Unlock()
	buf := e.echo[:0]
	for _, ev := range events {
		buf = append(append(buf, ev...), '\n')
	}
	if _, err := e.opts.Stdout.Write(buf); err != nil {
		e.echoFailed(err)
	}
	if cap(buf) <= 1<<20 {
		e.echo = buf
	}
}
