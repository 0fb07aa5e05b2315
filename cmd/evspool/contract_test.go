package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/internal/testkit/testmode"
)

// fsizeEnv asks the test binary to set RLIMIT_FSIZE and exec its arguments:
// what `ulimit -f` does in a shell, without depending on one.
const fsizeEnv = "EVSPOOL_TEST_FSIZE"

func execWithFileLimit(lim string) {
	n, err := strconv.ParseUint(lim, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err == nil {
		err = syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "file-limit helper:", err)
	os.Exit(1)
}

// withFileLimit returns a command running evspool with args under a file
// size limit of n bytes.
func withFileLimit(n int, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{binary}, args...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", fsizeEnv, n))
	return cmd
}

// exitOf runs cmd and returns its exit status and output.
func exitOf(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee, "%s", out)
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

// A file size limit (ulimit -f) makes the spool fail: events are echoed but
// not spooled, so not delivered: exit 4 with the counts, never 0.
func TestRunFileSizeLimitIsLoss(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	cmd := withFileLimit(96<<10, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--drain-timeout", "5s")
	in := lines("fsize", 0, 3000)
	cmd.Stdin = strings.NewReader(joinLines(in))
	code, out := exitOf(t, cmd)
	require.Equal(t, exitLost, code, out)
	require.Contains(t, out, "events were lost")
	m := regexp.MustCompile(`not_spooled=([1-9]\d*)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.NotContains(t, out, "everything delivered")
	rep := inspectJSON(t, "--spool", spool)
	require.Equal(t, m[1], strconv.FormatUint(rep.NotSpooledEvents, 10), "inspect shows the run's not spooled events")
	require.Less(t, rcv.Count(), len(in), "the limit really kept events out of the spool")
}

// Events dropped by the full-spool policy are lost even when everything left
// is delivered in the end: exit 4, not 0.
func TestRunDropsAreLoss(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-spool-size", "2MiB")
	in := lines(strings.Repeat("d", 200), 0, 20000)
	go func() {
		p.stdin.Write([]byte(joinLines(in)))
	}()
	require.Eventually(t, func() bool { return len(p.echoed()) == len(in) }, 20*time.Second, time.Millisecond)
	startSink(t, sock)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitLost, p.wait(t, 20*time.Second), p.logs())
	require.Contains(t, p.logs(), "events were lost")
	require.Regexp(t, `lost=[1-9]\d* not_spooled=0 dropped=[1-9]`, p.logs())
	require.Contains(t, p.logs(), "pending_events=0")
}

// produce writes lines to p's stdin until it fails (evspool exited).
func produce(p *proc) {
	line := []byte("ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 path delay 91\n")
	buf := []byte{}
	for range 100 {
		buf = append(buf, line...)
	}
	for {
		if _, err := p.stdin.Write(buf); err != nil {
			return
		}
	}
}

// A chatty producer and no receiver: SIGTERM, and SIGINT, still stop run
// within 2 s; every echoed line was committed (inspect counts them).
func TestRunSignalWithEndlessInput(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			sock, spool := paths(t)
			p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-spool-size", "1GiB")
			go produce(p)
			require.Eventually(t, func() bool { return len(p.echoed()) > 5000 }, 10*time.Second, time.Millisecond)
			require.NoError(t, p.cmd.Process.Signal(sig))
			begin := time.Now()
			code := p.wait(t, 10*time.Second)
			require.Less(t, time.Since(begin), 2*time.Second, "a signal must end run within 2 s")
			require.Equal(t, exitSpooled, code, p.logs())
			<-p.done
			rep := inspectJSON(t, "--spool", spool)
			require.EqualValues(t, len(p.echoed()), rep.PendingEvents, "every echoed line is committed")
		})
	}
}

// exec: the command exits but a background process it started keeps
// writing to its stdout; evspool still stops reading and exits.
func TestExecBackgroundWriterDoesNotHoldExit(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "exec", "--socket", sock, "--spool", spool, "--fsync=false", "--drain-timeout", "200ms",
		"--", "sh", "-c", "(while :; do echo background; done) & echo child exits")
	code := p.wait(t, 10*time.Second)
	require.Equal(t, 0, code, p.logs())
	require.Contains(t, p.logs(), "stopped reading it")
}

// exec: SIGTERM while the command ignores it and floods stdout: evspool
// still exits within 2 s, having killed the command.
func TestExecSignalWithStubbornCommand(t *testing.T) {
	sock, spool := paths(t)
	p := start(t, "exec", "--socket", sock, "--spool", spool, "--fsync=false",
		"--", "sh", "-c", "trap '' TERM INT; while :; do echo flood; done")
	require.Eventually(t, func() bool { return len(p.echoed()) > 1000 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	begin := time.Now()
	code := p.wait(t, 10*time.Second)
	require.Less(t, time.Since(begin), 2*time.Second, "a signal must end exec within 2 s")
	require.Equal(t, 128+int(syscall.SIGKILL), code, p.logs())
	require.Contains(t, p.logs(), "killing it")
}

// lockHeld reports whether some process holds a flock on path.
func lockHeld(t *testing.T, path string) bool {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	defer f.Close()
	return errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK) ||
		errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
}

// A spool whose start-up scan takes a while (about 2 s for the race-enabled
// evspool on 2 cores): SIGTERM during run's and exec's scan, and inspect
// while run starts.
func TestBigSpoolStartup(t *testing.T) {
	sock, spool := paths(t)
	// Big enough that the start-up scan is still running when the signal
	// comes (make torture: 2,000,000 events, a scan of several seconds).
	out, err := exec.Command(mkspool, spool, testmode.Pick("400000", "2000000")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	t.Run("SIGTERM during the start-up scan", func(t *testing.T) {
		p := start(t, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "4GiB")
		require.Eventually(t, func() bool { return lockHeld(t, filepath.Join(spool, "lock")) },
			10*time.Second, time.Millisecond, "run has the spool and scans it")
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		begin := time.Now()
		code := p.wait(t, 10*time.Second)
		require.Less(t, time.Since(begin), 2*time.Second, "SIGTERM must end run within 2 s, start-up included")
		require.Equal(t, exitSpooled, code, p.logs())
		require.Contains(t, p.logs(), "signal received during start-up", "the start-up was cut short, not finished")
	})

	t.Run("exec: SIGTERM during the start-up scan, the command never started", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "started")
		p := start(t, "exec", "--socket", sock, "--spool", spool, "--max-spool-size", "4GiB", "--", "touch", marker)
		require.Eventually(t, func() bool { return lockHeld(t, filepath.Join(spool, "lock")) },
			10*time.Second, time.Millisecond, "exec has the spool and scans it")
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		begin := time.Now()
		code := p.wait(t, 10*time.Second)
		require.Less(t, time.Since(begin), 2*time.Second, "SIGTERM must end exec within 2 s, start-up included")
		require.Equal(t, exitSpooled, code, p.logs())
		require.Contains(t, p.logs(), "signal received during start-up")
		require.NoFileExists(t, marker, "the command was not started")
	})

	t.Run("inspect does not keep run from starting", func(t *testing.T) {
		insp := exec.Command(binary, "inspect", "--spool", spool, "--json")
		var inspOut strings.Builder
		insp.Stdout, insp.Stderr = &inspOut, &inspOut
		require.NoError(t, insp.Start())
		inspDone := make(chan error, 1)
		go func() { inspDone <- insp.Wait() }()
		require.Eventually(t, func() bool {
			return lockHeld(t, filepath.Join(spool, "lock")) || lockHeld(t, filepath.Join(spool, "spool.db"))
		}, 10*time.Second, 100*time.Microsecond, "inspect is reading the spool")
		run := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--max-spool-size", "4GiB",
			"--drain-timeout", "100ms")
		run.Stdin = strings.NewReader("while inspect reads\n")
		code, out := exitOf(t, run)
		require.Equal(t, exitSpooled, code, "run must start while inspect reads: %s", out)
		require.NotContains(t, out, "in use")
		<-inspDone
		t.Logf("inspect said: %.300s", inspOut.String())
		require.NotContains(t, inspOut.String(), "panic")
		require.True(t, strings.Contains(inspOut.String(), `"pending_events"`) ||
			strings.Contains(inspOut.String(), "took the spool"), "inspect shows figures or says it gave way: %s", inspOut.String())
	})
}

var _ = json.Marshal

// exec: a second SIGTERM is not swallowed: it cuts the wait for a command
// that ignores the first one short.
func TestExecSecondSignalCutsWaitsShort(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "exec", "--socket", sock, "--spool", spool, "--fsync=false",
		"--", "sh", "-c", "trap '' TERM INT; echo ready; for i in $(seq 3000); do sleep 0.01; done")
	require.Eventually(t, func() bool { return len(p.echoed()) > 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(p.logs(), "forwarding signal to the command") },
		5*time.Second, time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 128+int(syscall.SIGKILL), p.wait(t, 10*time.Second), p.logs())
	require.Contains(t, p.logs(), "second stop signal: stopping at once")
	require.Equal(t, 2, strings.Count(p.logs(), "forwarding signal to the command"), "both were forwarded")
}
