package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/evspool/evspool/emitter"
)

// notifyState decides what evspool tells systemd (sd_notify, see notify.go):
// a pure type stepped with the emitter's figures, its liveness and the time,
// which returns the message to send. It owns no goroutine and does no I/O.
type notifyState struct {
	watchdog bool // systemd asked for pings (WATCHDOG_USEC)
	// pingEvery is the longest a tick may go without a ping (0: every
	// tick pings).
	pingEvery time.Duration
	pinged    time.Time // the last ping
	said      string    // the last STATUS= sent
	started   time.Time // evspool's start: "not connected since" before any outage is known
	starting  string    // what evspool does before READY=1; "" after it
	child     string    // exec: "ptp4l pid 123", shown first in STATUS
	wedged    string    // why Alive failed on the last tick; "" while alive
	stopping  bool      // STOPPING=1 sent: nothing more is sent after it
}

// begin is the first message, before the spool is open: what evspool is
// doing. The ticks repeat it (with watchdog pings: the start-up is bounded
// by TimeoutStartSec, not by the watchdog) until ready.
func (s *notifyState) begin(what string) string {
	s.starting = what
	s.said = "STATUS=" + what
	return s.said
}

// ready is the message once the spool is open (and exec's command started):
// READY=1 and the figures. child names exec's command, "" for run.
func (s *notifyState) ready(now time.Time, st emitter.Stats, child string) string {
	s.starting, s.child = "", child
	s.said = "STATUS=" + s.status(now, st)
	return "READY=1\n" + s.said
}

// tick is the periodic message: the figures when they changed, and
// WATCHDOG=1 when systemd asked for pings, the drainer is alive and
// pingEvery has passed since the last ping; "" when neither. alive is emitter.Alive's
// answer. changed is true when the liveness flipped, for the caller to log.
func (s *notifyState) tick(now time.Time, st emitter.Stats, alive error) (msg string, changed bool) {
	if s.stopping {
		return "", false
	}
	if s.starting != "" {
		return s.withPing(now, "STATUS="+s.starting, false), false
	}
	was := s.wedged
	s.wedged = ""
	if alive != nil {
		s.wedged = alive.Error()
	}
	changed = (was == "") != (s.wedged == "")
	return s.withPing(now, "STATUS="+s.status(now, st), changed), changed
}

// withPing returns status when it differs from what was said last, with
// WATCHDOG=1 when systemd asked for pings, the drainer is alive and a ping
// is due (pingEvery passed, or the drainer moves again); "" when there is
// nothing new to say.
func (s *notifyState) withPing(now time.Time, status string, revived bool) string {
	ping := s.watchdog && s.wedged == "" && (revived || s.pinged.IsZero() || now.Sub(s.pinged) >= s.pingEvery)
	if status == s.said && !ping {
		return ""
	}
	s.said = status
	if ping {
		s.pinged = now
		return status + "\nWATCHDOG=1"
	}
	return status
}

// stop is the message at a stop signal: STOPPING=1 and the figures; the
// ticks send nothing after it.
func (s *notifyState) stop(now time.Time, st emitter.Stats) string {
	if s.stopping {
		return ""
	}
	s.stopping = true
	return "STOPPING=1\nSTATUS=stopping: " + s.status(now, st)
}

// status is the one line systemctl status shows, e.g.
//
//	ptp4l pid 4242: 12 pending (oldest 3s), receiver down since 10:31:02 (5m0s), 4500 delivered, 0 lost
func (s *notifyState) status(now time.Time, st emitter.Stats) string {
	var b strings.Builder
	if s.wedged != "" {
		b.WriteString("drainer wedged, watchdog pings stopped: ")
	}
	if s.child != "" {
		b.WriteString(s.child + ": ")
	}
	fmt.Fprintf(&b, "%d pending", st.Pending)
	if st.Pending > 0 && !st.Spool.OldestTime.IsZero() {
		fmt.Fprintf(&b, " (oldest %v)", roundAge(now.Sub(st.Spool.OldestTime)))
	}
	if st.Connected {
		b.WriteString(", connected")
	} else {
		since := st.OutageStart
		if since.IsZero() {
			since = s.started
		}
		fmt.Fprintf(&b, ", receiver down since %s (%v)", since.UTC().Format(time.TimeOnly), roundAge(now.Sub(since)))
	}
	fmt.Fprintf(&b, ", %d delivered, %d lost", st.Delivered, st.Lost())
	return b.String()
}

// roundAge rounds an age for reading at a glance: to the second, or to the
// millisecond under a second; never negative.
func roundAge(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
