package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
)

// lastReadWindow is --replay-window's default: sized by the receiver's last
// read (emitter.Options.ReplayWindow 0).
const lastReadWindow = -1

// windowFlag is --replay-window: "last-read" (the default) or a size.
type windowFlag struct{ n *int64 }

func (f windowFlag) String() string {
	if f.n == nil || *f.n == lastReadWindow {
		return "last-read"
	}
	return units.FormatSize(*f.n)
}

func (f windowFlag) Set(s string) error {
	if s == "last-read" {
		*f.n = lastReadWindow
		return nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return fmt.Errorf("%w (or last-read)", err)
	}
	if n < 0 {
		return fmt.Errorf("a negative size: give last-read, 0 to acknowledge on read, or a size")
	}
	*f.n = n
	return nil
}

// replayWindow maps the flag (last-read, 0 off, or a size) onto the option
// (0 last read, negative off, or a size).
func replayWindow(n int64) int {
	switch n {
	case lastReadWindow:
		return 0
	case 0:
		return -1
	}
	return int(n)
}

// maxAttempts maps --max-attempts (0: never set aside) onto the option
// (0 default, negative never).
func maxAttempts(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// attemptsFlag is --max-attempts: a count, 0 or more.
type attemptsFlag struct{ n *int }

func (f attemptsFlag) String() string {
	if f.n == nil {
		return ""
	}
	return strconv.Itoa(*f.n)
}

func (f attemptsFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("give a count, 0 or more (0: never set an event aside)")
	}
	*f.n = n
	return nil
}

// registerDelivery adds --replay-window and --max-attempts.
func (r *runFlags) registerDelivery(fs *flag.FlagSet) {
	r.replayWindow = lastReadWindow
	r.maxAttempts = 3
	fs.Var(windowFlag{&r.replayWindow}, "replay-window",
		"an event the receiver read stays spooled, resent if it hangs up, until it is known handled: "+
			"last-read (default, Unix sockets) keeps what the receiver's last read held, since a receiver that reads, "+
			"handles every line, then reads again (cloud-event-proxy) can only have its last read unhandled; "+
			"a SIZE keeps that many bytes after it, for a receiver that hands lines to another goroutine "+
			"(over TCP, last-read keeps an event until the receiver stayed connected --replay-linger after its kernel took it, "+
			"and nothing proves it handled: such events count as unproven, exit 5); 0 acknowledges on read (unproven)")
	fs.Var(attemptsFlag{&r.maxAttempts}, "max-attempts",
		"failures of the receiver shown to be caused by one event (kept in the spool across restarts) that set it aside in DIR/dead-letters (0: never)")
}
