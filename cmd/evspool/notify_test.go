package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/testkit/clocktest"
)

// notifySocket listens on a unixgram socket as systemd does for a
// Type=notify unit and records each datagram (one sd_notify message).
type notifySocket struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []string
	news chan struct{} // a token per message
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	s := &notifySocket{path: path, conn: conn, news: make(chan struct{}, 10000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, string(buf[:n]))
			s.mu.Unlock()
			s.news <- struct{}{}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

func (s *notifySocket) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// waitFor waits until a message matching re has come and returns it.
func (s *notifySocket) waitFor(t *testing.T, re string, d time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var got string
	require.Eventually(t, func() bool {
		for _, m := range s.all() {
			if rx.MatchString(m) {
				got = m
				return true
			}
		}
		return false
	}, d, 5*time.Millisecond, "no sd_notify message matching %q; got %q", re, s.all())
	return got
}

// next returns the next message (for the tests that step a fake clock).
func (s *notifySocket) next(t *testing.T) string {
	t.Helper()
	select {
	case <-s.news:
	case <-time.After(5 * time.Second):
		t.Fatalf("no sd_notify message; got %q", s.all())
	}
	all := s.all()
	return all[len(all)-1]
}

// index is the position of the first message matching re, or -1.
func index(msgs []string, re string) int {
	rx := regexp.MustCompile(re)
	for i, m := range msgs {
		if rx.MatchString(m) {
			return i
		}
	}
	return -1
}

// checkOrder asserts the protocol's order: a STATUS= first, READY=1 once,
// STOPPING=1 once and last; WATCHDOG=1 only between the two.
func checkOrder(t *testing.T, msgs []string) {
	t.Helper()
	require.NotEmpty(t, msgs)
	require.True(t, strings.HasPrefix(msgs[0], "STATUS=opening the spool "), "first: %q", msgs[0])
	ready, stopping := index(msgs, `(?m)^READY=1$`), index(msgs, `(?m)^STOPPING=1$`)
	require.Positive(t, ready, "READY=1 after the first STATUS: %q", msgs)
	require.Equal(t, len(msgs)-1, stopping, "STOPPING=1 is the last message: %q", msgs)
	for i, m := range msgs {
		require.Equal(t, i == ready, strings.Contains(m, "READY=1"), "READY=1 once: %q", msgs)
		require.Equal(t, i == stopping, strings.Contains(m, "STOPPING=1"), "STOPPING=1 once: %q", msgs)
		require.True(t, strings.HasPrefix(m, "STATUS=") || strings.HasPrefix(m, "READY=1\nSTATUS=") ||
			strings.HasPrefix(m, "STOPPING=1\nSTATUS=stopping: "), "every message carries a STATUS=: %q", m)
	}
	require.Positive(t, index(msgs[ready:stopping], `(?m)^WATCHDOG=1$`), "pinged while running: %q", msgs)
}

func logMessages(t *testing.T, msgs []string) {
	t.Helper()
	for i, m := range msgs {
		t.Logf("sd_notify #%d: %q", i, m)
	}
}

// evspool run under a Type=notify unit with WatchdogSec=200ms: STATUS
// while the spool opens, READY=1 once open, STATUS with the figures as the
// receiver is down then up, WATCHDOG=1 every 100 ms, STOPPING=1 at SIGTERM.
func TestNotifyRun(t *testing.T) {
	ns := listenNotify(t)
	sock, spool := paths(t)
	p := startEnv(t, []string{"NOTIFY_SOCKET=" + ns.path, "WATCHDOG_USEC=200000"},
		"run", "--socket", sock, "--spool", spool)
	ns.waitFor(t, `^READY=1\nSTATUS=0 pending, receiver down since \d\d:\d\d:\d\d \(.*\), 0 delivered, 0 lost$`, 5*time.Second)

	_, err := p.stdin.Write([]byte(joinLines(lines("notify", 0, 5))))
	require.NoError(t, err)
	ns.waitFor(t, `^STATUS=5 pending \(oldest .*\), receiver down since .*, 0 delivered, 0 lost\nWATCHDOG=1$`, 5*time.Second)
	rcv := startSink(t, sock)
	waitLines(t, rcv, 5, 5*time.Second)
	ns.waitFor(t, `^STATUS=0 pending, connected, 5 delivered, 0 lost\nWATCHDOG=1$`, 5*time.Second)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, exitOK, p.wait(t, 5*time.Second), p.logs())
	ns.waitFor(t, `^STOPPING=1\n`, 5*time.Second) // sent before exit; maybe not read yet
	msgs := ns.all()
	logMessages(t, msgs)
	checkOrder(t, msgs)
	require.Equal(t, "STOPPING=1\nSTATUS=stopping: 0 pending, connected, 5 delivered, 0 lost", msgs[len(msgs)-1])
}

// evspool exec: READY=1 once the command runs (its pid in STATUS), the
// command does not see NOTIFY_SOCKET, STOPPING=1 at SIGTERM.
func TestNotifyExec(t *testing.T) {
	ns := listenNotify(t)
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := startEnv(t, []string{"NOTIFY_SOCKET=" + ns.path, "WATCHDOG_USEC=200000"},
		"exec", "--socket", sock, "--spool", spool, "--",
		// Bounded (10 s), in case evspool dies and leaves it running.
		"sh", "-c", `echo "child sees NOTIFY_SOCKET=[$NOTIFY_SOCKET] WATCHDOG_USEC=[$WATCHDOG_USEC]"; for i in $(seq 500); do sleep 0.02; done`)
	ready := ns.waitFor(t, `^READY=1\n`, 5*time.Second)
	var m []string
	require.Eventually(t, func() bool {
		m = regexp.MustCompile(`msg="command started" command=sh pid=(\d+)`).FindStringSubmatch(p.logs())
		return m != nil
	}, 5*time.Second, 5*time.Millisecond, "the command's pid is logged")
	// The command runs in its own process group: if the test fails, it must
	// not outlive it holding evspool's stderr.
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	require.Regexp(t, `^READY=1\nSTATUS=sh pid `+m[1]+`: \d+ pending`, ready, "READY=1 comes after the command started")
	require.Equal(t, []string{"child sees NOTIFY_SOCKET=[] WATCHDOG_USEC=[]"}, waitLines(t, rcv, 1, 5*time.Second))
	ns.waitFor(t, `^STATUS=sh pid `+m[1]+`: 0 pending, connected, 1 delivered, 0 lost\nWATCHDOG=1$`, 5*time.Second)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 128+int(syscall.SIGTERM), p.wait(t, 5*time.Second), p.logs())
	ns.waitFor(t, `^STOPPING=1\n`, 5*time.Second) // sent before exit; maybe not read yet
	msgs := ns.all()
	logMessages(t, msgs)
	checkOrder(t, msgs)
	require.Regexp(t, `^STOPPING=1\nSTATUS=stopping: sh pid `+m[1]+`: 0 pending, connected, 1 delivered, 0 lost$`, msgs[len(msgs)-1])
}

// Without NOTIFY_SOCKET nothing is sent and nothing runs.
func TestNotifyOffWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := startNotifier(slog.New(slog.DiscardHandler), "opening")
	require.Nil(t, n)
	n.ready(nil, "") // a nil notifier does nothing
	n.stopping()
	n.close()
}

// WATCHDOG_USEC turns the pings on, unless WATCHDOG_PID names another
// process; both are taken out of the environment (exec's command is not
// watched).
func TestNotifyWatchdogEnv(t *testing.T) {
	tests := map[string]struct {
		pid       string
		wantPing  bool
		wantEvery time.Duration
	}{
		"ours":        {pid: fmt.Sprint(os.Getpid()), wantPing: true, wantEvery: 50 * time.Millisecond},
		"unset":       {pid: "", wantPing: true, wantEvery: 50 * time.Millisecond},
		"another pid": {pid: "1", wantPing: false, wantEvery: notifyEvery},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := listenNotify(t)
			t.Setenv("NOTIFY_SOCKET", ns.path)
			t.Setenv("WATCHDOG_USEC", "100000")
			t.Setenv("WATCHDOG_PID", tc.pid)
			n := startNotifier(slog.New(slog.DiscardHandler), "opening the spool /x")
			defer n.close()
			require.Equal(t, tc.wantPing, n.state.watchdog)
			require.Equal(t, tc.wantEvery, n.every)
			require.Empty(t, os.Getenv("WATCHDOG_USEC"))
			require.Empty(t, os.Getenv("WATCHDOG_PID"))
			require.Equal(t, "STATUS=opening the spool /x", ns.next(t))
		})
	}
}

// A drainer wedged in a dial that ignores its context (the emitter's Dial
// seam): the STATUS says so and the WATCHDOG=1 pings stop, so systemd
// restarts evspool after WatchdogSec=; once the drainer moves, they resume.
func TestNotifyWatchdogStopsWhenDrainerWedges(t *testing.T) {
	ns := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", ns.path)
	wedge, release := make(chan struct{}), make(chan struct{})
	var d net.Dialer
	dir := t.TempDir()
	em, err := emitter.Open(filepath.Join(dir, "events.sock"), filepath.Join(dir, "spool"), &emitter.Options{
		Stdout: io.Discard, NoSync: true,
		// Alive's limit is then 500 ms: well over the 100 ms backoff between
		// dials, even on a loaded machine (20 ms was not, under -race at load 14).
		DialTimeout: 250 * time.Millisecond, WriteTimeout: 250 * time.Millisecond, StallTimeout: 250 * time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			select {
			case <-wedge:
				<-release // ignores ctx: wedged
			default:
			}
			return d.DialContext(ctx, network, addr)
		},
	})
	require.NoError(t, err)
	defer func() {
		closeOnce(release)
		require.NoError(t, em.Close(context.Background()))
	}()
	var logs bytes.Buffer
	var logMu sync.Mutex
	clk := clocktest.NewFake(time.Now())
	n := newNotifier(sdNotify, clk, slog.New(slog.NewTextHandler(&syncWriter{mu: &logMu, w: &logs}, nil)), 200*time.Millisecond)
	n.begin("opening the spool")
	defer n.close()
	require.Equal(t, "STATUS=opening the spool", ns.next(t))
	n.ready(em, "")
	require.Regexp(t, `^READY=1\nSTATUS=0 pending, receiver down since`, ns.next(t))

	tick := func() string {
		require.Eventually(t, func() bool { return clk.Timers() == 1 }, 5*time.Second, time.Millisecond)
		clk.Advance(100 * time.Millisecond)
		return ns.next(t)
	}
	require.Regexp(t, `^STATUS=0 pending, receiver down .*\nWATCHDOG=1$`, tick(), "alive through an outage")

	close(wedge)
	require.Eventually(t, func() bool { return errors.Is(em.Alive(), emitter.ErrNotAlive) }, 5*time.Second, time.Millisecond)
	for range 3 {
		msg := tick()
		require.Regexp(t, `^STATUS=drainer wedged, watchdog pings stopped: 0 pending, receiver down `, msg)
		require.NotContains(t, msg, "WATCHDOG=1")
	}
	logMu.Lock()
	require.Contains(t, logs.String(), "the drainer is wedged")
	logMu.Unlock()

	close(release)
	require.Eventually(t, func() bool { return em.Alive() == nil }, 5*time.Second, time.Millisecond)
	require.Regexp(t, `^STATUS=0 pending, receiver down .*\nWATCHDOG=1$`, tick(), "pings resume")
	logMessages(t, ns.all())
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
