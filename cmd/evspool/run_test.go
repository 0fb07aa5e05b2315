package main

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/verify"
)

func TestRunDeliversAndExitsZero(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	sent := lines("run", 0, 5000)
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool)
	cmd.Stdin = strings.NewReader(joinLines(sent))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Equal(t, joinLines(sent), stdout.String(), "stdout carries the events and nothing else")
	res := verify.Check(sent, waitLines(t, rcv, len(sent), 5*time.Second))
	require.True(t, res.OK(), res.String())
}

func TestRunOversizedLineRefused(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	input := "before\n" + strings.Repeat("y", 2000) + "\nafter\n"
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-event-size", "1KiB")
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &ee, stderr.String())
	require.Equal(t, exitLost, ee.ExitCode(), "a refused line is a loss: %s", stderr.String())
	require.Equal(t, "before\nafter\n", stdout.String())
	require.Contains(t, stderr.String(), "size=2001")
	require.Contains(t, stderr.String(), "limit=1024")
	require.Equal(t, []string{"before", "after"}, waitLines(t, rcv, 2, 5*time.Second))
}

func TestRunExitCodes(t *testing.T) {
	sock, spool := paths(t)
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"run"},
			{"run", "--socket", sock},
			{"run", "--socket", sock, "--spool", spool, "--on-full", "sometimes"},
			{"run", "--socket", sock, "--spool", spool, "--max-spool-size", "lots"},
			{"run", "--socket", sock, "--spool", spool, "--drain-timeout", "-1s"},
			{"run", "--nope"},
			{"frobnicate"},
		} {
			out, err := exec.Command(binary, args...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%v", args)
			require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, out)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "one line: %s", out)
		}
	})
	t.Run("left spooled", func(t *testing.T) {
		cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--drain-timeout", "300ms")
		cmd.Stdin = strings.NewReader("a\nb\n")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 3, ee.ExitCode(), "%s", out)
		require.Contains(t, string(out), "pending_events=2")
	})
	t.Run("locked spool is fatal", func(t *testing.T) {
		holder := start(t, "run", "--socket", sock, "--spool", spool)
		require.Eventually(t, func() bool { return strings.Contains(holder.logs(), "receiver unreachable") }, 5*time.Second, 10*time.Millisecond)
		cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool)
		cmd.Stdin = strings.NewReader("x\n")
		begin := time.Now()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 1, ee.ExitCode(), "%s", out)
		require.Contains(t, string(out), "in use by another process")
		require.Less(t, time.Since(begin), 5*time.Second)
	})
}

func TestRunSignalExitsPromptly(t *testing.T) {
	sock, spool := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", spool)
	_, err := p.stdin.Write([]byte("one\ntwo\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(p.echoed()) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	begin := time.Now()
	code := p.wait(t, 5*time.Second)
	require.Less(t, time.Since(begin), 2*time.Second, "SIGTERM must end run within 2 s")
	require.Equal(t, 3, code, p.logs())

	// The next run on the same spool delivers them.
	rcv := startSink(t, sock)
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool)
	cmd.Stdin = strings.NewReader("three\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, []string{"one", "two", "three"}, waitLines(t, rcv, 3, 5*time.Second))
}

// evspool run is SIGKILLed mid-stream and restarted on the same spool, several
// times: every line it echoed reaches the receiver, in order.
func TestRunKilledAndRestarted(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var echoed []string
	next := 0
	for round := 0; round < 4; round++ {
		p := start(t, "run", "--socket", sock, "--spool", spool)
		chunk := lines("kill", next, next+3000)
		next += 3000
		go func() {
			for _, l := range chunk {
				if _, err := p.stdin.Write([]byte(l + "\n")); err != nil {
					return
				}
			}
		}()
		target := 200 + rng.IntN(2500)
		require.Eventually(t, func() bool { return len(p.echoed()) >= target }, 20*time.Second, time.Millisecond)
		require.NoError(t, p.cmd.Process.Kill())
		p.wait(t, 5*time.Second)
		echoed = append(echoed, p.echoed()...)
	}
	// A last run with no input delivers what is left and exits 0.
	last := start(t, "run", "--socket", sock, "--spool", spool)
	require.NoError(t, last.stdin.Close())
	require.Equal(t, 0, last.wait(t, 20*time.Second), last.logs())

	// Every echoed line arrived, in order; lines read but not yet echoed when
	// the process died were never promised. The receiver records a line a
	// moment after reading it, so wait for what is missing.
	var res verify.Result
	require.Eventually(t, func() bool {
		res = verify.Check(echoed, onlyIn(rcv.Lines(), echoed))
		return res.Missing == 0
	}, 10*time.Second, 5*time.Millisecond, "still missing: %v", &res)
	require.True(t, res.OK(), res.String())
	t.Logf("echoed %d, %s", len(echoed), res)
}

// onlyIn keeps the lines of got that are in want.
func onlyIn(got, want []string) []string {
	set := make(map[string]bool, len(want))
	for _, w := range want {
		set[w] = true
	}
	var out []string
	for _, g := range got {
		if set[g] {
			out = append(out, g)
		}
	}
	return out
}
