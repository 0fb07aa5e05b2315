package emitter

import (
	"errors"
	"syscall"
)

// echoFailed counts a failed write of the echo and says so once: stdout is
// the local record, not the delivery, so a reader that went away (a log
// collector restarted, `| head -1`) stops nothing else. The caller holds
// echoMu. A process that writes to a pipe with no reader is killed by
// SIGPIPE unless it ignores it: the CLI does (see cmd/evspool).
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
