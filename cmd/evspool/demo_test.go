package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The demo runs to completion: evspool lost nothing, the reconnect-only
// sender lost something under the same faults.
func TestDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes about 6 s")
	}
	out, err := exec.Command(binary, "demo", "--duration", "5s").CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	row := func(name string) (int, int) {
		m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `\s+(\d+)\s+(\d+)$`).FindStringSubmatch(text)
		require.NotNil(t, m, "no %q row in:\n%s", name, text)
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		return a, b
	}
	produced, _ := row("events produced")
	require.Equal(t, 5000, produced)
	gotA, gotB := row("events received")
	lostA, lostB := row("lost")
	require.Zero(t, lostA, text)
	require.Equal(t, produced, gotA)
	require.Positive(t, lostB, "the reconnect-only sender loses events under these faults:\n%s", text)
	require.Equal(t, produced, gotB+lostB)
	require.Regexp(t, `(?m)^  in order\s+yes\s+yes$`, text)
	require.Contains(t, text, "evspool lost nothing")
	require.Regexp(t, `SIGKILLed with \d+ events undelivered in its spool`, text)
	// Every duplicate is put down to the fault it followed.
	dups, _ := row("delivered twice (replay)")
	attributed := 0
	for _, m := range regexp.MustCompile(`(?m)^\s+(\d+) after the (receiver crash|evspool SIGKILL) at `).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		attributed += n
	}
	require.Equal(t, dups, attributed, "duplicates attributed to faults:\n%s", text)
}
