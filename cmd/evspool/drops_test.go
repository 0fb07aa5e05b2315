package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
