package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"exec", "--help"}, {"sink", "--help"},
		{"inspect", "--help"}, {"demo", "--help"}} {
		out, err := exec.Command(binary, args...).Output()
		require.NoError(t, err, "%v", args)
		require.Contains(t, string(out), "Examples:", "%v", args)
	}
	out, err := exec.Command(binary, "run", "--help").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "cloud-event-proxy reads lines of at most 64KiB", "--max-event-size says what the receiver reads")
	require.Contains(t, string(out), "--replay-window")
	// The exit statuses of the contract, in --help and run --help.
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		out, err := exec.Command(binary, args...).Output()
		require.NoError(t, err, "%v", args)
		require.Regexp(t, `(?s)0\s+everything delivered, nothing lost.*3\s+stopped with events\s+still spooled.*4\s+events lost`, string(out), "%v", args)
	}
	out, err = exec.Command(binary, "--version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "evspool "), "%s", out)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"exec", "--socket", "s", "--spool", "d", "--max-spool-size", "12 parsecs", "--", "true"},
		{"exec", "--bogus", "--", "true"},
		{"run", "--socket", "s", "--spool", "d", "--replay-linger", "0s"},
		{"run", "--socket", "s", "--spool", "d", "--replay-window", "-1"},
		{"run", "--socket", "s", "--spool", "d", "--max-attempts", "-1"},
		{"inspect", "--spool"},
		{"inspect", "--spool", "d", "extra"},
		{"demo", "--duration", "soon"},
		{"demo", "--rate", "0"},
	} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, out)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "one line: %s", out)
	}
}
