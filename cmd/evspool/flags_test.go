package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// The tests below each see one flag of run and exec take effect through the
// binary: ignored, the flag would leave the library at its default, and the
// test fails.

// --network tcp reaches a receiver on a TCP port, from run and from exec.
// Over TCP nothing proves an event handled: both exit 5.
func TestNetworkTCP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  []string
		code int
	}{
		{[]string{"run"}, exitUnproven},
		{[]string{"exec", "--", "cat"}, exitUnproven}, // 5 where COMMAND exits 0
	} {
		t.Run(tc.cmd[0], func(t *testing.T) {
			t.Parallel()
			rcv, err := refrecv.Start("tcp", "127.0.0.1:0", nil)
			require.NoError(t, err)
			t.Cleanup(func() { rcv.Close() })
			_, spool := paths(t)
			args := append([]string{tc.cmd[0], "--network", "tcp", "--socket", rcv.Addr(), "--spool", spool,
				"--fsync=false", "--drain-timeout", "5s"}, tc.cmd[1:]...)
			p := start(t, args...)
			sent := lines("tcp", 0, 50)
			_, err = p.stdin.Write([]byte(joinLines(sent)))
			require.NoError(t, err)
			require.NoError(t, p.stdin.Close())
			require.Equal(t, tc.code, p.wait(t, 20*time.Second), p.logs())
			require.Contains(t, p.logs(), "unproven=50", "acknowledged on the receiver's kernel's word")
			res := verify.Check(sent, waitLines(t, rcv, len(sent), 5*time.Second))
			require.True(t, res.OK(), res.String())
		})
	}
}

// --on-full: drop-newest keeps the oldest events and drops what comes
// after; block makes run wait for room instead of dropping, so a receiver
// far slower than the input gets every event. (drop-oldest, the default,
// is TestRunLogsDrops.)
func TestRunOnFull(t *testing.T) {
	t.Parallel()
	t.Run("drop-newest", func(t *testing.T) {
		t.Parallel()
		sock, spool := paths(t)
		var in strings.Builder
		for i := range 20_000 {
			fmt.Fprintf(&in, "full %06d %s\n", i, strings.Repeat("x", 90))
		}
		cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "1MiB",
			"--on-full", "drop-newest", "--fsync=false", "--drain-timeout", "100ms")
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		require.Equal(t, exitLost, ee.ExitCode(), "%s", out)
		rep := inspectJSON(t, "--spool", spool)
		require.Positive(t, rep.DroppedNewestEvents, "%s", out)
		require.Zero(t, rep.DroppedOldestEvents)
		require.EqualValues(t, 1, rep.OldestSeq, "the first events are kept")
		require.EqualValues(t, 20_000, rep.PendingEvents+rep.DroppedNewestEvents)
	})
	t.Run("block", func(t *testing.T) {
		t.Parallel()
		sock, spool := paths(t)
		// 150 events of 16 KiB, twice what the spool holds, to a receiver
		// that takes 5 ms a line (0.75 s in all): what was not delivered
		// while run read its input would be dropped.
		rcv, err := refrecv.Start("unix", sock, &refrecv.Options{HandleTime: 5 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { rcv.Close() })
		var sent []string
		for i := range 150 {
			sent = append(sent, fmt.Sprintf("block %03d %s", i, strings.Repeat("x", 16<<10)))
		}
		p := start(t, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "1MiB",
			"--on-full", "block", "--fsync=false")
		go func() {
			_, _ = p.stdin.Write([]byte(joinLines(sent)))
			p.stdin.Close()
		}()
		require.Equal(t, exitOK, p.wait(t, 30*time.Second), p.logs())
		res := verify.Check(sent, waitLines(t, rcv, len(sent), 5*time.Second))
		require.True(t, res.OK(), res.String())
		rep := inspectJSON(t, "--spool", spool)
		require.Zero(t, rep.DroppedEvents)
	})
}

// --replay-window 0 acknowledges events as soon as the receiver read them:
// nothing proves them handled, so run exits 5 where the default exits 0.
func TestRunReplayWindowZero(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--replay-window", "0")
	sent := lines("window", 0, 20)
	_, err := p.stdin.Write([]byte(joinLines(sent)))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitUnproven, p.wait(t, 20*time.Second), p.logs())
	require.Contains(t, p.logs(), "unproven=20")
	require.Equal(t, sent, waitLines(t, rcv, len(sent), 5*time.Second))
}

// --fsync=false turns the commits' fsync off, which the spool reports
// (TestMetricsEndpoint sees 1 without the flag).
func TestRunFsyncOff(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--metrics-addr", "127.0.0.1:0")
	addr := waitMetricsAddr(t, p)
	require.Equal(t, 0.0, value(t, scrape(t, addr), "evspool_spool_fsync"))
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.logs())
}

// --max-attempts 1 sets a poison event aside at the first failure shown to
// be its: a receiver that dies on it (closes its connection) dies twice,
// once among other events (no evidence), once given it alone; the default
// 3 would take 4 deaths.
func TestRunMaxAttempts(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startPoisonReceiver(t, sock, "poison")
	before, after := lines("before", 0, 20), lines("after", 0, 20)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-attempts", "1")
	_, err := p.stdin.Write([]byte(joinLines(append(append(append([]string{}, before...), "poison"), after...))))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitLost, p.wait(t, 20*time.Second), p.logs())
	require.Contains(t, p.logs(), "dead_lettered=1")
	deaths, handled := rcv.result()
	t.Logf("the receiver died %d times", deaths)
	require.Less(t, deaths, 4, "set aside after the first strike:\n%s", p.logs())
	res := verify.Check(append(before, after...), handled)
	require.True(t, res.OK(), res.String())
	require.EqualValues(t, 1, inspectJSON(t, "--spool", spool).DeadLetteredEvents)
}

// poisonReceiver reads each connection line by line, in a goroutine of its
// own, and closes it at once when it reads the poison line, as a receiver
// that dies on it and is restarted.
type poisonReceiver struct {
	mu      sync.Mutex
	deaths  int
	handled []string
}

func startPoisonReceiver(t *testing.T, sock, poison string) *poisonReceiver {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	r := &poisonReceiver{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c, poison)
		}
	}()
	return r
}

func (r *poisonReceiver) serve(c net.Conn, poison string) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		r.mu.Lock()
		if sc.Text() == poison {
			r.deaths++
			r.mu.Unlock()
			return
		}
		r.handled = append(r.handled, sc.Text())
		r.mu.Unlock()
	}
}

// result returns how many times the receiver died, and the lines it handled.
func (r *poisonReceiver) result() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deaths, append([]string(nil), r.handled...)
}

var notReading = regexp.MustCompile(`msg="receiver is not reading; keeping the connection" .*stalled_for=(\S+)`)

// --write-timeout: a receiver that reads nothing is reported once it read
// nothing for that long, not after the default 5 s.
func TestRunWriteTimeout(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{NeverRead: true})
	require.NoError(t, err)
	t.Cleanup(func() { rcv.Kill() })
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--write-timeout", "100ms")
	_, err = p.stdin.Write([]byte("unread\n"))
	require.NoError(t, err)
	var m []string
	require.Eventually(t, func() bool {
		m = notReading.FindStringSubmatch(p.logs())
		return m != nil
	}, 20*time.Second, 10*time.Millisecond, "no stall reported")
	stalled, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	require.Less(t, stalled, emitter.DefaultWriteTimeout, "reported after --write-timeout: %s", m[0])
}

// unansweredTCP returns a loopback TCP address whose connection attempts
// hang: its listener's accept queue (backlog 0) is full, so Linux drops
// their SYNs.
func unansweredTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	rc, err := ln.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	var lerr error
	require.NoError(t, rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }))
	require.NoError(t, lerr)
	filler, err := net.Dial("tcp", ln.Addr().String()) // takes the one place in the queue
	require.NoError(t, err)
	t.Cleanup(func() { filler.Close() })
	_, err = net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Skipf("a full accept queue does not hold connection attempts here: %v", err)
	}
	return ln.Addr().String()
}

// --dial-timeout bounds each connection attempt. To a receiver whose
// attempts hang, one run with 100ms fails three attempts while another
// with 1m, started beside it, has not failed one (with the default 1 s,
// both would fail alike).
func TestRunDialTimeout(t *testing.T) {
	t.Parallel()
	addr := unansweredTCP(t)
	run := func(timeout string) string {
		_, spool := paths(t)
		p := start(t, "run", "--network", "tcp", "--socket", addr, "--spool", spool, "--fsync=false",
			"--metrics-addr", "127.0.0.1:0", "--dial-timeout", timeout)
		return waitMetricsAddr(t, p)
	}
	long, short := run("1m"), run("100ms")
	require.Eventually(t, func() bool { return value(t, scrape(t, short), "evspool_dial_errors_total") >= 3 },
		20*time.Second, 10*time.Millisecond)
	require.Zero(t, value(t, scrape(t, long), "evspool_dial_errors_total"), "an attempt failed before --dial-timeout 1m")
}

// --state-clear: an event of that type retires every key before it, so the
// spool keeps none (ignored, it would be a key of its own: 3).
func TestRunStateClear(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	sent := []string{`{"type":"a"}`, `{"type":"b"}`, `{"type":"cache_clear"}`}
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false",
		"--state-key", "type", "--state-clear", "cache_clear")
	_, err := p.stdin.Write([]byte(joinLines(sent)))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.logs())
	require.Equal(t, sent, waitLines(t, rcv, len(sent), 5*time.Second), "the clear is delivered in its place")
	require.Zero(t, inspectJSON(t, "--spool", spool).StateKeys)
}

// --state-max-age: a new connection starts with the state, less the keys
// no event renewed for that long.
func TestRunStateMaxAge(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--metrics-addr", "127.0.0.1:0",
		"--state-key", "k", "--state-max-age", "200ms")
	addr := waitMetricsAddr(t, p)
	old, fresh := `{"k":"old"}`, `{"k":"fresh"}`
	_, err := p.stdin.Write([]byte(old + "\n"))
	require.NoError(t, err)
	waitLines(t, rcv, 1, 5*time.Second)
	require.Eventually(t, func() bool { return value(t, scrape(t, addr), "evspool_spool_pending_events") == 0 },
		10*time.Second, 5*time.Millisecond, "acknowledged: the state, not the backlog, carries it now")
	require.NoError(t, rcv.Kill())
	rcv.Reset()
	_, err = p.stdin.Write([]byte(fresh + "\n"))
	require.NoError(t, err)
	// fresh waits in the spool; once it is 300ms old, old is older still.
	require.Eventually(t, func() bool { return value(t, scrape(t, addr), "evspool_oldest_pending_age_seconds") >= 0.3 },
		10*time.Second, 10*time.Millisecond)
	require.NoError(t, rcv.Restart())
	// The state comes first on the new connection: had it held old, old
	// would arrive before fresh.
	require.Equal(t, []string{fresh}, waitLines(t, rcv, 1, 5*time.Second))
}

// --release-idle closes a connection that carried nothing for that long,
// and dials again for the next event.
func TestRunReleaseIdle(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--release-idle", "100ms")
	_, err := p.stdin.Write([]byte("first\n"))
	require.NoError(t, err)
	waitLines(t, rcv, 1, 5*time.Second)
	require.Eventually(t, func() bool { return rcv.Conns() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the idle connection is kept")
	_, err = p.stdin.Write([]byte("second\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"first", "second"}, waitLines(t, rcv, 2, 5*time.Second))
	require.Equal(t, 2, rcv.Accepted())
}

var logLevelOf = regexp.MustCompile(`(?m)^time=\S+ level=(\w+) `)

// --log-level: debug shows the debug lines (here the idle release's);
// error shows only errors (here a refused line's loss), from run and exec.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	refused := "before\n" + strings.Repeat("y", 2000) + "\nafter\n"
	for _, tc := range []struct {
		name, level, input string
		args               []string
		code               int
		want               string
	}{
		{"run debug", "debug", "one\n", []string{"run", "--release-idle", "50ms"}, exitOK,
			`level=DEBUG msg="released the idle connection"`},
		{"run error", "error", refused, []string{"run", "--max-event-size", "1KiB"}, exitLost,
			`level=ERROR msg="events were lost"`},
		{"exec error", "error", refused, []string{"exec", "--max-event-size", "1KiB", "--", "cat"}, exitLost,
			`level=ERROR msg="command exited; events were lost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sock, spool := paths(t)
			startSink(t, sock)
			p := start(t, append([]string{tc.args[0], "--socket", sock, "--spool", spool, "--fsync=false",
				"--log-level", tc.level}, tc.args[1:]...)...)
			_, err := p.stdin.Write([]byte(tc.input))
			require.NoError(t, err)
			if tc.level == "debug" { // released once idle, before the end of input
				require.Eventually(t, func() bool { return strings.Contains(p.logs(), tc.want) }, 10*time.Second, 5*time.Millisecond,
					"no debug line")
			}
			require.NoError(t, p.stdin.Close())
			require.Equal(t, tc.code, p.wait(t, 20*time.Second), p.logs())
			require.Contains(t, p.logs(), tc.want)
			if tc.level == "error" {
				for _, m := range logLevelOf.FindAllStringSubmatch(p.logs(), -1) {
					require.Equal(t, "ERROR", m[1], p.logs())
				}
			}
		})
	}
}

// --max-attempts with a receiver that closes its connection at once when it
// reads a line too long for it (evspool sink does): the long line is set
// aside, never the line before it, and run does not wait forever.
func TestRunMaxAttemptsLongLineClosedAtOnce(t *testing.T) {
	t.Parallel()
	for _, attempts := range []string{"1", "3"} {
		t.Run(attempts, func(t *testing.T) {
			t.Parallel()
			sock, spool := paths(t)
			rcv := startSink(t, sock)
			before, after := lines("before", 0, 20), lines("after", 0, 20)
			long := "long " + strings.Repeat("x", 70000)
			p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-attempts", attempts,
				"--max-event-size", "128KiB")
			_, err := p.stdin.Write([]byte(joinLines(append(append(append([]string{}, before...), long), after...))))
			require.NoError(t, err)
			require.NoError(t, p.stdin.Close())
			require.Equal(t, exitLost, p.wait(t, 30*time.Second), p.logs())
			require.Contains(t, p.logs(), "dead_lettered=1")
			dls, err := ledger.ReadDeadLetters(spool)
			require.NoError(t, err)
			require.Len(t, dls, 1)
			require.Equal(t, long, string(dls[0].Data))
			res := verify.Check(append(before, after...), rcv.Lines())
			require.True(t, res.OK(), res.String())
			require.EqualValues(t, 1, inspectJSON(t, "--spool", spool).DeadLetteredEvents)
		})
	}
}
