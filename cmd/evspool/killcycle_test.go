package main

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// droppedInLogs adds up the drops the JSON log lines report: the drop
// warnings, and a start's report of what an earlier process did not log.
func droppedInLogs(t *testing.T, logs string) (n uint64) {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		msg, _ := rec["msg"].(string)
		switch {
		case msg == "spool full: oldest events dropped to make room":
			n += uint64(rec["dropped_events"].(float64))
		case rec["kind"] == "dropped_oldest" && strings.HasPrefix(msg, "the previous run dropped"):
			n += uint64(rec["unreported_events"].(float64))
		}
	}
	return n
}

// Under repeated kills every drop is in some process's log, once: the sum
// of the logs' counts is inspect's total. Before: drops made after the last
// warning of a SIGKILLed process were logged by no one.
func TestKillCyclesLogEveryDrop(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	var logged uint64
	pad := strings.Repeat("x", 500)
	for cycle := range 4 {
		p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-spool-size", "1MiB",
			"--log-format", "json", "--drain-timeout", "50ms")
		sent := lines(pad, cycle*3000, cycle*3000+3000)
		_, err := io.WriteString(p.stdin, joinLines(sent))
		require.NoError(t, err)
		// Echoed means committed: every drop these made is in the spool.
		require.Eventually(t, func() bool { return len(p.echoed()) == len(sent) }, 20*time.Second, 5*time.Millisecond)
		if cycle%2 == 0 {
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		} else {
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		}
		p.wait(t, 10*time.Second)
		logged += droppedInLogs(t, p.logs())
	}
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-spool-size", "1MiB",
		"--log-format", "json", "--drain-timeout", "50ms")
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitSpooled, p.wait(t, 10*time.Second), p.logs())
	logged += droppedInLogs(t, p.logs())

	rep := inspectJSON(t, "--spool", spool)
	t.Logf("dropped: %d in the logs, %d in inspect", logged, rep.DroppedOldestEvents)
	require.Positive(t, rep.DroppedOldestEvents)
	require.Equal(t, rep.DroppedOldestEvents, logged, "every drop logged once")
}
