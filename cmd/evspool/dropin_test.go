package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --preamble lines come first on the connection, in order, and are neither
// echoed nor spooled.
func TestRunPreamble(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	pre := []string{"CMD LIVE_START", "ptp4l[1700000000]:[ptp4l.0.config] PTP_PROCESS_STATUS:1"}
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false",
		"--preamble", pre[0], "--preamble", pre[1])
	sent := lines("pre", 0, 50)
	_, err := io.WriteString(p.stdin, joinLines(sent))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, 0, p.wait(t, 10*time.Second), p.logs())
	require.Equal(t, append(pre, sent...), waitLines(t, rcv, len(pre)+len(sent), 5*time.Second))
	require.Equal(t, sent, p.echoed(), "the preamble is not echoed")
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, len(sent), rep.NewestSeq, "the preamble is not spooled")
}

func TestRunPreambleAndMaxAgeUsage(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"newline":  {"--preamble", "CMD\nLIVE_START"},
		"too long": {"--max-event-size", "16", "--preamble", strings.Repeat("x", 16)},
		"negative": {"--max-age", "-1s"},
		"not age":  {"--max-age", "ten minutes"},
	} {
		out, err := exec.Command(binary, append([]string{"run", "--socket", "s", "--spool", t.TempDir()}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, name)
		require.Equal(t, exitUsage, ee.ExitCode(), "%s: %s", name, out)
		require.Contains(t, string(out), strings.TrimPrefix(args[len(args)-2], "--"), name)
	}
}

// Events spooled longer ago than --max-age are dropped unsent when their turn
// comes, counted (inspect shows it) and logged; the fresh ones go through.
func TestRunMaxAge(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	stale := lines("stale", 0, 120)
	leaveSpooled(t, sock, spool, stale)
	spooled := time.Now() // after leaveSpooled: every stale event is at least this old
	// Let them age past --max-age.
	require.Eventually(t, func() bool { return time.Since(spooled) > 700*time.Millisecond }, 5*time.Second, 10*time.Millisecond)

	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-age", "500ms")
	fresh := lines("fresh", 0, 30)
	_, err := io.WriteString(p.stdin, joinLines(fresh))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitLost, p.wait(t, 10*time.Second), "expired events are lost events: %s", p.logs())
	require.Equal(t, fresh, waitLines(t, rcv, len(fresh), 5*time.Second))
	require.Contains(t, p.logs(), "events older than the maximum age dropped unsent")
	rep := inspectJSON(t, "--spool", spool)
	require.EqualValues(t, 120, rep.ExpiredEvents)
	require.Zero(t, rep.PendingEvents)
}

func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// --metrics-addr also serves the liveness and readiness probes. (Their
// failing states are tested in package emitter/metrics.)
func TestRunProbeEndpoints(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--metrics-addr", "127.0.0.1:0")
	addr := waitMetricsAddr(t, p)
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := probe(t, "http://"+addr+path)
		require.Equal(t, http.StatusOK, code, path)
		require.Equal(t, "ok\n", body, path)
	}
	require.NoError(t, p.stdin.Close())
	p.wait(t, 10*time.Second)
}

// On a full disk /readyz turns 503 and says why, while /healthz stays 200
// (restarting would not free the disk). (Ready again after a successful
// commit: TestReadyFollowsCommits in package emitter.)
func TestRunReadyzOnFullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill the disk needs root; run as root (CI does)")
	}
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=1048576,mode=0700"); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	sock, _ := paths(t)
	p := start(t, "run", "--socket", sock, "--spool", filepath.Join(disk, "spool"), "--fsync=false",
		"--max-spool-size", "8MiB", "--metrics-addr", "127.0.0.1:0", "--drain-timeout", "100ms")
	addr := waitMetricsAddr(t, p)
	code, _ := probe(t, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusOK, code)

	line := strings.Repeat("f", 1000) + "\n"
	for i := 0; !strings.Contains(p.logs(), "events not spooled"); i++ {
		require.Less(t, i, 5000, "the disk never filled: %s", p.logs())
		_, err := io.WriteString(p.stdin, line)
		require.NoError(t, err)
	}
	// Readiness follows the last commit, and one can still fit now and then
	// (a failed commit's rollback frees pages): keep the failures coming
	// until a probe sees one.
	var body string
	require.Eventually(t, func() bool {
		if _, err := io.WriteString(p.stdin, line); err != nil {
			return false
		}
		var code int
		code, body = probe(t, "http://"+addr+"/readyz")
		return code == http.StatusServiceUnavailable
	}, 10*time.Second, 10*time.Millisecond, "readyz never said 503 on a full disk: %s", p.logs())
	require.Contains(t, body, "last spool commit failed")
	code, _ = probe(t, "http://"+addr+"/healthz")
	require.Equal(t, http.StatusOK, code, "alive all the same")
	require.NoError(t, p.stdin.Close())
	p.wait(t, 10*time.Second)
}
