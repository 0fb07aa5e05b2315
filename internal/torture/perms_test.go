package torture

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The spool is created 0700 (directory) and 0600 (files) whatever the
// umask, and a directory other users can write is refused.
func TestSpoolPermissions(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	old := syscall.Umask(0)
	cmd := exec.Command(binary, "run", "--socket", filepath.Join(dir, "s.sock"), "--spool", spool, "--drain-timeout", "100ms")
	cmd.Stdin = strings.NewReader("x\n")
	out, _ := cmd.CombinedOutput()
	syscall.Umask(old)
	require.Equal(t, 3, cmd.ProcessState.ExitCode(), "%s", out)
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	require.Equal(t, os.FileMode(0o700), mode(spool))
	require.Equal(t, os.FileMode(0o600), mode(filepath.Join(spool, "spool.db")))
	require.Equal(t, os.FileMode(0o600), mode(filepath.Join(spool, "lock")))

	require.NoError(t, os.Chmod(spool, 0o777))
	cmd = exec.Command(binary, "run", "--socket", filepath.Join(dir, "s.sock"), "--spool", spool, "--drain-timeout", "100ms")
	cmd.Stdin = strings.NewReader("y\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), "%s", stderr.String())
	require.Contains(t, stderr.String(), "writable by other users")
	require.Contains(t, stderr.String(), "chmod 700 "+spool)
	require.Empty(t, stdout.String(), "nothing echoed")
}
