package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// leaveSpooled runs evspool with no receiver so that lines stay spooled.
func leaveSpooled(t *testing.T, sock, spool string, sent []string) {
	t.Helper()
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--drain-timeout", "100ms", "--fsync=false")
	cmd.Stdin = strings.NewReader(joinLines(sent))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, exitSpooled, ee.ExitCode(), "%s", out)
}

func inspectJSON(t *testing.T, args ...string) report {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"inspect", "--json"}, args...)...).Output()
	require.NoError(t, err, "%s", out)
	var rep report
	require.NoError(t, json.Unmarshal(out, &rep), "%s", out)
	return rep
}

func TestInspectStoppedSpool(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	sent := lines("inspect", 0, 120)
	begin := time.Now()
	leaveSpooled(t, sock, spool, sent)

	rep := inspectJSON(t, "--spool", spool, "--dump", "3")
	require.Equal(t, "stopped", rep.State)
	require.EqualValues(t, 120, rep.PendingEvents)
	require.EqualValues(t, len(joinLines(sent))-len(sent), rep.PendingBytes, "event bytes, without newlines")
	require.EqualValues(t, 1, rep.OldestSeq)
	require.EqualValues(t, 120, rep.NewestSeq)
	require.Positive(t, rep.FileBytes)
	require.Positive(t, rep.OldestAgeSeconds)
	require.Less(t, rep.OldestAgeSeconds, time.Since(begin).Seconds()+1)
	require.Zero(t, rep.DroppedEvents)
	require.Len(t, rep.Events, 3)
	require.Equal(t, sent[0], rep.Events[0].Data)
	require.EqualValues(t, 3, rep.Events[2].Seq)
	require.NotNil(t, rep.Status, "the last run's status")
	require.False(t, rep.Status.Running)

	out, err := exec.Command(binary, "inspect", "--spool", spool, "--dump", "2").Output()
	require.NoError(t, err)
	text := string(out)
	require.Regexp(t, `(?m)^pending events\s+120$`, text)
	require.Regexp(t, `(?m)^newest seq\s+120$`, text)
	require.Regexp(t, `(?m)^dropped events\s+0 \(drop-oldest 0, drop-newest 0\)$`, text)
	require.Regexp(t, `(?m)^2\t\S+\t`+regexp.QuoteMeta(sent[1])+`$`, text)
	require.NotContains(t, text, sent[2])
}

func TestInspectLiveSpool(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0")
	_, err := p.stdin.Write([]byte(joinLines(lines("live", 0, 5))))
	require.NoError(t, err)
	var rep report
	require.Eventually(t, func() bool {
		// The status is written within a second of the start and each second.
		out, err := exec.Command(binary, "inspect", "--json", "--spool", spool).Output()
		return err == nil && json.Unmarshal(out, &rep) == nil && rep.PendingEvents == 5
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "in_use", rep.State)
	require.Equal(t, p.cmd.Process.Pid, rep.Status.PID)
	require.True(t, rep.Status.Running)
	require.False(t, rep.Status.Connected)
	require.Equal(t, sock, rep.Status.Socket)
	require.Contains(t, rep.Status.MetricsAddr, "127.0.0.1:")
	require.NotEmpty(t, rep.Status.LastError, "the dial error")
	require.Less(t, *rep.StatusAgeSeconds, 5.0)

	out, err := exec.Command(binary, "inspect", "--spool", spool).Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "IN USE by a running evspool (pid "+itoaPid(p)+")")
	require.Regexp(t, `(?m)^pending events\s+5$`, string(out))
	require.Contains(t, string(out), "http://127.0.0.1:")
}

func TestInspectErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged")
	require.NoError(t, os.MkdirAll(damaged, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(damaged, "spool.db"), []byte(strings.Repeat("not a bbolt file ", 2000)), 0o600))
	tests := map[string]struct {
		args []string
		want int
		says string
	}{
		"damaged":              {[]string{"--spool", damaged}, 1, "is damaged"},
		"no spool":             {[]string{"--spool", filepath.Join(dir, "nothing")}, 1, "no spool in"},
		"no --spool":           {nil, 2, "--spool is required"},
		"bad dump":             {[]string{"--spool", dir, "--dump", "-1"}, 2, "--dump must be 0 or more"},
		"dead letters as json": {[]string{"--spool", dir, "--dead-letters", "--json"}, 2, "leave out --json and --dump"},
		"dead letters dumped":  {[]string{"--spool", dir, "--dead-letters", "--dump", "3"}, 2, "leave out --json and --dump"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(binary, append([]string{"inspect"}, tc.args...)...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, tc.want, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), tc.says)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "one line: %s", out)
		})
	}
}

func itoaPid(p *proc) string { return strconv.Itoa(p.cmd.Process.Pid) }

// A spool held by a process that keeps no status (a daemon embedding the
// library) is reported as in use; the last run's status is not shown as live.
func TestInspectLockedWithoutStatus(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	leaveSpooled(t, sock, spool, lines("lib", 0, 3))
	w, err := wal.Open(spool, nil)
	require.NoError(t, err)
	defer w.Close()
	out, err := exec.Command(binary, "inspect", "--spool", spool).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), "in use by a running process that keeps no status here")
}
