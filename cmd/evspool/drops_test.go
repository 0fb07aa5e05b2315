package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// Drops by a full spool under drop-oldest are logged (and counted).
func TestRunLogsDrops(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	var in strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&in, "drop %06d %s\n", i, strings.Repeat("x", 90))
	}
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "1MiB",
		"--fsync=false", "--drain-timeout", "100ms")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, exitLost, ee.ExitCode(), "drops are losses: %s", stderr.String())
	m := regexp.MustCompile(`msg="spool full: oldest events dropped to make room" dropped_events=(\d+) dropped_total=(\d+)`).
		FindAllStringSubmatch(stderr.String(), -1)
	require.NotEmpty(t, m, stderr.String())
	require.LessOrEqual(t, len(m), 2, "rate-limited: the first drops, then the rest at exit")
	rep := inspectJSON(t, "--spool", spool)
	require.Positive(t, rep.DroppedOldestEvents)
	require.Equal(t, fmt.Sprint(rep.DroppedOldestEvents), m[len(m)-1][2], "the last line has the total")
	require.EqualValues(t, 20_000, rep.PendingEvents+rep.DroppedOldestEvents)
	require.Contains(t, stderr.String(), fmt.Sprintf("dropped=%d", rep.DroppedOldestEvents), "the final line counts them")
}

// Under drop-oldest with a receiver slower than the input, the final line
// and inspect report lost exactly the events the receiver never handled:
// none is counted both delivered and dropped.
func TestRunDropOldestLostIsMissing(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{HandleTime: 500 * time.Microsecond})
	require.NoError(t, err)
	defer rcv.Close()
	const n = 6000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "drop %06d %s\n", i, strings.Repeat("x", 400))
	}
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "1MiB",
		"--on-full", "drop-oldest", "--fsync=false", "--drain-timeout", "60s")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, exitLost, ee.ExitCode(), stderr.String())
	require.NoError(t, rcv.Close())
	handled := map[string]bool{}
	for _, l := range rcv.Lines() {
		handled[l] = true
	}
	missing := n - len(handled)
	require.Positive(t, missing, "the spool was too small for the input")
	require.Contains(t, stderr.String(), fmt.Sprintf(`msg="events were lost" lost=%d `, missing), "lost = missing")
	require.Contains(t, stderr.String(), fmt.Sprintf(" delivered=%d ", len(handled)))
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, missing, rep.DroppedEvents)
	require.Zero(t, rep.PendingEvents)
}

// Events that each fit a small spool are never refused for the size of the
// batch run reads them in: a commit costing more than the spool holds is
// refused whole, so run keeps its batches within the spool.
func TestRunBatchesFitASmallSpool(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	var in strings.Builder
	for i := range 150 {
		fmt.Fprintf(&in, "big %03d %s\n", i, strings.Repeat("x", 16<<10))
	}
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "1MiB",
		"--on-full", "drop-newest", "--fsync=false", "--drain-timeout", "100ms")
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, exitLost, ee.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), " not_spooled=0 ", "no event refused for its batch's size")
	rep := inspectJSON(t, "--spool", spool)
	require.Positive(t, rep.PendingEvents)
	require.EqualValues(t, 150, rep.PendingEvents+rep.DroppedNewestEvents)
}
