package main

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal/clock"
)

// notifyEvery is how often the figures are looked at: STATUS= is sent when
// it changed, WATCHDOG=1 twice per WatchdogSec.
const notifyEvery = 2 * time.Second

// notifier speaks systemd's notification protocol (sd_notify(3)) when
// NOTIFY_SOCKET is set, as it is for a Type=notify unit: STATUS= at start,
// READY=1 once the spool is open (and exec's command started), STATUS=
// with the figures when they change, WATCHDOG=1 twice per WatchdogSec while
// the drainer is alive (WATCHDOG_USEC set, WATCHDOG_PID ours or unset), and
// STOPPING=1 at a stop signal. What to send is notifyState's decision; the
// notifier sends it, on its own goroutine. A nil notifier does nothing.
type notifier struct {
	send   func(state string) error
	clk    clock.Clock
	logger *slog.Logger
	every  time.Duration

	mu     sync.Mutex
	state  notifyState
	em     *emitter.Emitter // set by ready
	failed bool             // a send failed: warned once

	quit chan struct{}
	done chan struct{}
}

// startNotifier returns a running notifier when NOTIFY_SOCKET is set, or
// nil. It takes WATCHDOG_USEC and WATCHDOG_PID out of the environment (exec's
// command is not the one systemd watches) and says what evspool is doing.
func startNotifier(logger *slog.Logger, starting string) *notifier {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	wd, err := daemon.SdWatchdogEnabled(true)
	if err != nil {
		logger.Warn("ignoring systemd's watchdog settings", "error", err)
	}
	n := newNotifier(sdNotify, clock.System(), logger, wd)
	n.begin(starting)
	return n
}

// sdNotify sends one message to NOTIFY_SOCKET.
func sdNotify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// newNotifier returns a notifier that sends through send and, when
// watchdog (WATCHDOG_USEC) is positive, pings at half of it or more often.
func newNotifier(send func(string) error, clk clock.Clock, logger *slog.Logger, watchdog time.Duration) *notifier {
	every := notifyEvery
	var pingEvery time.Duration
	if watchdog > 0 {
		// A tick may come up to every late: a ping every half
		// WatchdogSec, less one tick, at the latest.
		every = min(every, watchdog/2)
		pingEvery = watchdog/2 - every
		logger.Debug("systemd watchdog on", "watchdog", watchdog, "ping_every", pingEvery+every)
	}
	return &notifier{send: send, clk: clk, logger: logger, every: every,
		state: notifyState{watchdog: watchdog > 0, pingEvery: pingEvery, started: clk.Now()},
		quit:  make(chan struct{}), done: make(chan struct{})}
}

// begin sends what evspool is doing before it is ready and starts the ticks.
func (n *notifier) begin(what string) {
	n.mu.Lock()
	n.sendLocked(n.state.begin(what))
	n.mu.Unlock()
	go n.run()
}

// ready sends READY=1: from now on the ticks report em's figures and ping
// the watchdog only while em.Alive() holds. child names exec's command.
func (n *notifier) ready(em *emitter.Emitter, child string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.em = em
	n.sendLocked(n.state.ready(n.clk.Now(), em.Stats(), child))
}

// stopping sends STOPPING=1 (at a stop signal); nothing is sent after it.
func (n *notifier) stopping() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var st emitter.Stats
	if n.em != nil {
		st = n.em.Stats()
	}
	n.sendLocked(n.state.stop(n.clk.Now(), st))
}

// close stops the ticks.
func (n *notifier) close() {
	if n == nil {
		return
	}
	close(n.quit)
	<-n.done
}

func (n *notifier) run() {
	defer close(n.done)
	t := n.clk.NewTimer(n.every)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			n.tick()
			t.Reset(n.every)
		case <-n.quit:
			return
		}
	}
}

func (n *notifier) tick() {
	n.mu.Lock()
	defer n.mu.Unlock()
	var st emitter.Stats
	var alive error
	if n.em != nil {
		st, alive = n.em.Stats(), n.em.Alive()
	}
	msg, changed := n.state.tick(n.clk.Now(), st, alive)
	switch {
	case changed && alive != nil:
		n.logger.Error("the drainer is wedged: evspool stops pinging systemd's watchdog (systemd restarts it after WatchdogSec=)",
			"error", alive, "watchdog", n.state.watchdog)
	case changed:
		n.logger.Info("the drainer moves again: watchdog pings resume")
	}
	n.sendLocked(msg)
}

func (n *notifier) sendLocked(msg string) {
	if msg == "" {
		return
	}
	if err := n.send(msg); err != nil && !n.failed {
		n.failed = true // once: delivery does not depend on it
		n.logger.Warn("cannot notify systemd (NOTIFY_SOCKET)", "error", err)
	}
}

// childEnv is the environment exec's command gets: evspool's, without
// NOTIFY_SOCKET, so that a command that speaks sd_notify itself does not
// talk to systemd in evspool's name.
func childEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			out = append(out, kv)
		}
	}
	return out
}
