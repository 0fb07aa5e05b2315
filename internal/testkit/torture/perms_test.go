package torture

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
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

// The attack on a spool directory another user made first (in /tmp, a
// shared emptyDir): as nobody, make it 0700 and plant receiver, marks and
// lock as links to files of root's. root's evspool refuses the directory,
// says whose it is and what to do, and writes nothing through the links.
func TestSpoolOfAnotherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play the other user")
	}
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(dir, "root-file")
	require.NoError(t, os.WriteFile(victim, []byte("root's file, 0644, must stay as it is\n"), 0o644))
	spool := filepath.Join(dir, "spool")
	require.NoError(t, os.Mkdir(spool, 0o700))
	for name, target := range map[string]string{"receiver": victim, "marks": victim, "lock": filepath.Join(dir, "new-file")} {
		require.NoError(t, os.Symlink(target, filepath.Join(spool, name)))
		require.NoError(t, os.Lchown(filepath.Join(spool, name), 65534, 65534))
	}
	require.NoError(t, os.Chown(spool, 65534, 65534))

	cmd := exec.Command(binary, "run", "--socket", filepath.Join(dir, "s.sock"), "--spool", spool, "--drain-timeout", "100ms")
	cmd.Stdin = strings.NewReader("x\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), "%s", stderr.String())
	require.Contains(t, stderr.String(), spool+" belongs to uid 65534")
	require.Contains(t, stderr.String(), "chown 0 "+spool)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "root's file, 0644, must stay as it is\n", string(b))
	require.NoFileExists(t, filepath.Join(dir, "new-file"))
	require.Empty(t, stdout.String(), "nothing echoed")
}

// Links in a directory of evspool's own (left by an operator, or planted
// before a chown): evspool writes through none of them. One it needs to
// open the spool (spool.db, marks, lock) stops it with an error naming the
// link; the status file it replaces; "receiver", a file of earlier
// evspools, it removes (the link, not what it points to).
func TestPlantedLinksNotFollowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		code int
		says string
	}{
		{"spool.db", 1, "is a symbolic link to"},
		{"marks", 1, "is a symbolic link to"},
		{"lock", 1, "is a symbolic link to"},
		{"receiver", 0, ""},
		{"status.json", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			victim := filepath.Join(dir, "root-file")
			require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
			spool := filepath.Join(dir, "spool")
			require.NoError(t, os.Mkdir(spool, 0o700))
			require.NoError(t, os.Symlink(victim, filepath.Join(spool, tc.name)))
			sock := filepath.Join(dir, "s.sock")
			rcv, err := refrecv.Start("unix", sock, &refrecv.Options{})
			require.NoError(t, err)
			defer rcv.Close()

			cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--drain-timeout", "10s")
			cmd.Stdin = strings.NewReader("x\n")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			_ = cmd.Run()
			require.Equal(t, tc.code, cmd.ProcessState.ExitCode(), "%s", stderr.String())
			require.Contains(t, stderr.String(), tc.says)
			if tc.code == 1 {
				require.Contains(t, stderr.String(), filepath.Join(spool, tc.name))
			}
			b, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.Equal(t, "keep\n", string(b), "written through the link")
			fi, err := os.Stat(victim)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
			if tc.name == "receiver" {
				_, err := os.Lstat(filepath.Join(spool, tc.name))
				require.ErrorIs(t, err, os.ErrNotExist, "an earlier evspool's receiver note is removed")
			}
			if tc.name == "status.json" {
				fi, err := os.Lstat(filepath.Join(spool, tc.name))
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode(), "replaced by a file of its own")
			}
		})
	}
}

// sink --out keeps event contents from other users: the file is created
// 0600 whatever the umask.
func TestSinkOutPrivate(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "events.out")
	cmd := exec.Command(binary, "sink", "--socket", filepath.Join(dir, "s.sock"), "--out", out)
	old := syscall.Umask(0o022) // the usual one, which left it 0644
	err := cmd.Start()
	syscall.Umask(old)
	require.NoError(t, err)
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	require.Eventually(t, func() bool {
		_, err := os.Stat(out)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	fi, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
