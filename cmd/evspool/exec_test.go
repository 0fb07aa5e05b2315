package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/verify"
)

// A child that prints lines and exits 7: evspool delivers every line, lets
// the child's stderr through, and exits 7.
func TestExecDeliversAndExitsWithStatus(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	script := `for i in $(seq 1 2000); do echo "exec $i ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2"; done; echo "child complaint" >&2; exit 7`
	cmd := exec.Command(binary, "exec", "--socket", sock, "--spool", spool, "--", "sh", "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	require.Equal(t, 7, ee.ExitCode(), stderr.String())

	var sent []string
	for i := 1; i <= 2000; i++ {
		sent = append(sent, "exec "+strconv.Itoa(i)+" ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2")
	}
	require.Equal(t, joinLines(sent), stdout.String(), "stdout carries the echoed events only")
	require.Contains(t, stderr.String(), "child complaint")
	require.Contains(t, stderr.String(), "exit_status=7")
	res := verify.Check(sent, waitLines(t, rcv, len(sent), 5*time.Second))
	require.True(t, res.OK(), res.String())
}

// SIGTERM to evspool reaches the child, whose last words are delivered, and
// evspool exits with the child's status.
func TestExecForwardsSignals(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		script string
		want   int
		lines  []string
	}{
		"child traps it": {
			script: `trap 'echo got-term; exit 42' TERM; echo ready; while :; do sleep 0.02; done`,
			want:   42, lines: []string{"ready", "got-term"},
		},
		"child killed by it": {script: `echo ready; exec sleep 30`, want: 128 + 15, lines: []string{"ready"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sock, spool := paths(t)
			rcv := startSink(t, sock)
			p := start(t, "exec", "--socket", sock, "--spool", spool, "--", "sh", "-c", tc.script)
			require.Eventually(t, func() bool { return len(p.echoed()) > 0 }, 5*time.Second, 5*time.Millisecond)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, tc.want, p.wait(t, 5*time.Second), p.logs())
			require.Contains(t, p.logs(), "forwarding signal to the command")
			require.Equal(t, tc.lines, waitLines(t, rcv, len(tc.lines), 5*time.Second))
		})
	}
}

func TestExecCannotStart(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	notExec := filepath.Join(t.TempDir(), "not-executable")
	require.NoError(t, os.WriteFile(notExec, []byte("echo hi\n"), 0o644))
	tests := map[string]struct {
		args []string
		want int
		says string
	}{
		"not found":      {[]string{"--", "evspool-no-such-command"}, 127, "executable file not found"},
		"not executable": {[]string{"--", notExec}, 126, "permission denied"},
		"no command":     {[]string{"--"}, 2, "no COMMAND given"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"exec", "--socket", sock, "--spool", spool}, tc.args...)
			out, err := exec.Command(binary, args...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.want, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), tc.says)
			require.NotContains(t, string(out), "panic")
		})
	}
}

// Events still spooled when --drain-timeout passes after the child exited:
// evspool still exits with the child's status, and says so.
func TestExecLeftSpooledKeepsChildStatus(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	out, err := exec.Command(binary, "exec", "--socket", sock, "--spool", spool, "--drain-timeout", "200ms",
		"--", "sh", "-c", "echo one; echo two").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "events still spooled")
	require.Contains(t, string(out), "pending_events=2")
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, 2, rep.PendingEvents)
}
