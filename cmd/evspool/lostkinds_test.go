package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// Every kind of loss makes the final line say so, with its count under its
// own key, and the exit status 4.
func TestExitStatusEveryLossKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key string
		st  emitter.Stats
	}{
		{"not_spooled", emitter.Stats{SpoolErrors: 3}},
		{"dropped", emitter.Stats{Dropped: 3}},
		{"expired", emitter.Stats{Expired: 3}},
		{"dead_lettered", emitter.Stats{DeadLettered: 3}},
		{"refused", emitter.Stats{Refused: 3}},
		{"unreadable", emitter.Stats{Unreadable: 3}},
	} {
		var logs bytes.Buffer
		code := exitStatus(tc.st, slog.New(slog.NewTextHandler(&logs, nil)))
		require.Equal(t, exitLost, code, tc.key)
		require.Contains(t, logs.String(), `msg="events were lost" lost=3 `, tc.key)
		require.Contains(t, logs.String(), " "+tc.key+"=3 ", tc.key)
		require.Equal(t, 2, strings.Count(logs.String(), "=3 "), "%s: in the total and under its own key only: %s", tc.key, logs.String())
	}
}

// A line over --max-event-size is refused, not echoed, and lost: the final
// line counts it, the exit status is 4, inspect and /metrics show it, and the
// next run neither reports nor counts it again.
func TestRunRefusedLineIsALoss(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0")
	addr := waitMetricsAddr(t, p)
	_, err := p.stdin.Write([]byte("before\n" + strings.Repeat("y", 65536) + "\nafter\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"before", "after"}, waitLines(t, rcv, 2, 5*time.Second))
	require.Eventually(t, func() bool {
		return value(t, scrape(t, addr), "evspool_events_refused_total") == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitLost, p.wait(t, 10*time.Second), p.logs())
	require.Equal(t, []string{"before", "after"}, p.echoed(), "a refused line is not echoed")
	require.Contains(t, p.logs(), `msg="events refused, not spooled" events=1 reason=too_large size=65537 limit=65536`)
	require.Contains(t, p.logs(), `msg="events were lost" lost=1 not_spooled=0 dropped=0 expired=0 dead_lettered=0 refused=1 unreadable=0`)
	require.NotContains(t, p.logs(), "everything delivered")
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, 1, rep.RefusedEvents)
	out, err := exec.Command(binary, "inspect", "--spool", spool).Output()
	require.NoError(t, err)
	require.Regexp(t, `(?m)^refused events\s+1 `, string(out))

	again := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--replay-linger", "20ms")
	again.Stdin = strings.NewReader("next\n")
	res, err := again.CombinedOutput()
	require.NoError(t, err, "reported by the run that refused it: %s", res)
	require.NotContains(t, string(res), "did not report it")
}

// damageSpool leaves n events spooled by a run, then truncates spool.db to
// half its size: a salvage cannot read part of them.
func damageSpool(t *testing.T, sock, spool string, n int) {
	t.Helper()
	leaveSpooled(t, sock, spool, lines("damaged", 0, n))
	path := filepath.Join(spool, "spool.db")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()/2))
}

var unreadableLogged = regexp.MustCompile(`msg="spool was damaged and has been salvaged" .*unreadable_events=(\d+)`)

// Events a salvage could not read are lost: the final line counts them,
// the exit status is 4 (it was 0, "everything delivered ... lost=0"),
// inspect and /metrics show them, and the next run does not count them again.
func TestRunSalvageLossIsALoss(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	damageSpool(t, sock, spool, 5000)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0")
	addr := waitMetricsAddr(t, p)
	m := unreadableLogged.FindStringSubmatch(p.logs())
	require.NotNil(t, m, p.logs())
	unreadable, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Positive(t, unreadable)
	require.Equal(t, float64(unreadable), value(t, scrape(t, addr), "evspool_events_unreadable_total"))
	waitLines(t, rcv, 5000-unreadable, 10*time.Second)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitLost, p.wait(t, 10*time.Second), p.logs())
	require.Contains(t, p.logs(), fmt.Sprintf(`msg="events were lost" lost=%d not_spooled=0 dropped=0 expired=0 dead_lettered=0 refused=0 unreadable=%d pending_events=0`,
		unreadable, unreadable))
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, unreadable, rep.UnreadableEvents)
	require.Zero(t, rep.PendingEvents)
	out, err := exec.Command(binary, "inspect", "--spool", spool).Output()
	require.NoError(t, err)
	require.Regexp(t, fmt.Sprintf(`(?m)^unreadable events\s+%d `, unreadable), string(out))

	again := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--replay-linger", "20ms")
	again.Stdin = strings.NewReader("next\n")
	res, err := again.CombinedOutput()
	require.NoError(t, err, "reported by the run that salvaged: %s", res)
	require.NotContains(t, string(res), "did not report it")
}

// A process that salvaged the spool and died before it logged the loss:
// the next run reports it, counts it and exits 4.
func TestRunReportsAKilledRunsSalvage(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	damageSpool(t, sock, spool, 2000)
	// The salvage of a process killed before it logged anything: the
	// spool records the count, no one reported it.
	w, err := wal.Open(spool, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.NotNil(t, w.Salvaged())
	unreadable := w.Salvaged().Missing
	require.Positive(t, unreadable)
	require.NoError(t, w.Close())

	rcv := startSink(t, sock)
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--replay-linger", "20ms")
	cmd.Stdin = strings.NewReader("fresh\n")
	code, out := exitOf(t, cmd)
	require.Equal(t, exitLost, code, out)
	require.Contains(t, out, fmt.Sprintf("the previous run found %d events unreadable in its damaged spool and did not report it", unreadable))
	require.Contains(t, out, fmt.Sprintf("unreadable=%d", unreadable))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, 2000-int(unreadable)+1))
}

// A run SIGKILLed with a refusal recorded but not logged yet (the warnings
// are rate-limited): the next run reports it, counts it and exits 4; the
// lines of the two runs add up to inspect's total.
func TestRunReportsAKilledRunsRefusals(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0", "--max-event-size", "1KiB")
	addr := waitMetricsAddr(t, p)
	long := strings.Repeat("z", 2000)
	_, err := p.stdin.Write([]byte("a\n" + long + "\nb\n" + long + "\nc\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return value(t, scrape(t, addr), "evspool_events_refused_total") == 2
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return len(p.echoed()) == 3 }, 5*time.Second, 5*time.Millisecond)
	logged := regexp.MustCompile(`msg="events refused, not spooled" events=(\d+)`).FindAllStringSubmatch(p.logs(), -1)
	require.Len(t, logged, 1, "the second refusal waits for the next line (rate-limited): %s", p.logs())
	require.Equal(t, "1", logged[0][1])
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t, 5*time.Second)

	startSink(t, sock)
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--replay-linger", "20ms")
	cmd.Stdin = strings.NewReader("d\n")
	code, out := exitOf(t, cmd)
	require.Equal(t, exitLost, code, out)
	require.Contains(t, out, "the previous run refused 1 lines (over the size limit, or not a line) and did not report it")
	require.Contains(t, out, " refused=1 ")
	require.EqualValues(t, 2, inspectJSON(t, "--spool", spool).RefusedEvents, "1 logged by each run")
}
