package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A --metrics-addr net.Listen cannot take is bad usage (exit 2), said
// before anything starts, with the form it wants; a good one passes.
func TestMetricsAddrUsage(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"localhost", "9477", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:99999", "[::1"} {
		out, err := exec.Command(binary, "run", "--socket", "s", "--spool", t.TempDir(), "--metrics-addr", addr).CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, addr)
		require.Equal(t, exitUsage, ee.ExitCode(), "--metrics-addr %s: %s", addr, out)
		require.Contains(t, string(out), `--metrics-addr "`+addr+`": give HOST:PORT, e.g. 127.0.0.1:9477`)
	}
	for _, addr := range []string{"", "127.0.0.1:9477", ":9477", "[::1]:0", "localhost:0"} {
		require.NoError(t, checkMetricsAddr(addr), addr)
	}
}

// sink in a directory that does not exist names the directory to create,
// and no internal package; other listen failures keep the system's reason.
func TestSinkListenErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "cloud-native", "events.sock")
	out, err := exec.Command(binary, "sink", "--socket", missing).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitFatal, ee.ExitCode())
	require.Equal(t, "evspool sink: cannot listen on "+missing+": the directory "+filepath.Dir(missing)+
		" does not exist: create it (mkdir -p "+filepath.Dir(missing)+") or give a --socket in a directory that exists\n", string(out))

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	out, _ = exec.Command(binary, "sink", "--socket", file).CombinedOutput()
	require.Equal(t, "evspool sink: cannot listen on unix "+file+": the path exists and is not a socket; remove it\n", string(out))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	out, _ = exec.Command(binary, "sink", "--network", "tcp", "--socket", ln.Addr().String()).CombinedOutput()
	require.Contains(t, string(out), "evspool sink: cannot listen on tcp "+ln.Addr().String()+": ")
	require.Contains(t, string(out), "address already in use")
	require.False(t, strings.Contains(string(out), "refrecv"), "no internal package name: %s", out)
}

// A spool in use by a process that keeps no readable status: inspect's
// advice fits a library's user too (its metrics), not only the CLI's flag.
func TestInspectLiveHint(t *testing.T) {
	t.Parallel()
	_, err := inspectLive(t.TempDir(), time.Now())
	require.Error(t, err)
	require.Contains(t, err.Error(), "try its metrics (evspool run and exec serve them on --metrics-addr)")
}
