package wal_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestOpenPermissions checks that Open creates the directory 0700 and every
// file 0600 whatever the umask, compaction's fresh file included.
func TestOpenPermissions(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o077} {
		t.Run(os.FileMode(mask).String(), func(t *testing.T) {
			old := syscall.Umask(mask)
			t.Cleanup(func() { syscall.Umask(old) })

			dir := filepath.Join(t.TempDir(), "a", "spool")
			w := spOpen(t, dir, &wal.Options{NoSync: true})
			_, err := w.Append(context.Background(), []byte("one"))
			require.NoError(t, err)
			require.NoError(t, w.Compact())

			fi, err := os.Stat(dir)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "spool directory")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.NotEmpty(t, entries)
			for _, e := range entries {
				fi, err := e.Info()
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "file %s", e.Name())
			}
		})
	}
}

// TestOpenRefusesUnsafeDir checks that a directory other users can write to is
// refused, with a message naming it, and nothing is created in it.
func TestOpenRefusesUnsafeDir(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mode os.FileMode
		ok   bool
	}{
		{"private", 0o700, true},
		{"world-readable", 0o755, true},
		{"group-writable", 0o770, false},
		{"world-writable", 0o707, false},
		{"wide-open", 0o777, false},
		{"sticky like /tmp", 0o777 | os.ModeSticky, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.mode))
			w, err := wal.Open(dir, &wal.Options{NoSync: true})
			if tc.ok {
				require.NoError(t, err)
				require.NoError(t, w.Close())
				return
			}
			require.ErrorIs(t, err, wal.ErrUnsafeDir)
			require.Contains(t, err.Error(), dir)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing may be created in an unsafe directory")
		})
	}
}

func TestOpenRefusesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	_, err := wal.Open(path, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), path)
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts *wal.Options
		want []string // in the error; nil: Open succeeds
	}{
		{"nil", nil, nil},
		{"zero", &wal.Options{}, nil},
		{"min cap", &wal.Options{MaxBytes: wal.MinMaxBytes}, nil},
		{"cap too small", &wal.Options{MaxBytes: wal.MinMaxBytes - 1}, []string{"wal: MaxBytes 1048575 is below the minimum", "give at least", "or 0"}},
		{"negative cap", &wal.Options{MaxBytes: -1}, []string{"wal: MaxBytes -1 is below the minimum", "give at least", "or 0"}},
		{"bad policy", &wal.Options{OnFull: wal.Block + 1}, []string{"wal: OnFull 3 is not a policy", "use DropOldest, DropNewest or Block"}},
		{"negative policy", &wal.Options{OnFull: -1}, []string{"wal: OnFull -1 is not a policy"}},
		{"negative lock timeout", &wal.Options{LockTimeout: -time.Second}, []string{"wal: LockTimeout -1s is negative", "or 0"}},
		{"negative state keys", &wal.Options{MaxStateKeys: -1}, []string{"wal: MaxStateKeys -1 is negative", "or 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before wal.Options
			if tc.opts != nil {
				before = *tc.opts
			}
			dir := filepath.Join(t.TempDir(), "spool")
			w, err := wal.Open(dir, tc.opts)
			if tc.want != nil {
				require.Error(t, err)
				for _, s := range tc.want {
					require.ErrorContains(t, err, s)
				}
				require.NoDirExists(t, dir, "refused before the directory is made")
				return
			}
			require.NoError(t, err)
			defer w.Close()
			if tc.opts != nil {
				require.Equal(t, before.MaxBytes, tc.opts.MaxBytes, "Open must not change the caller's Options")
				require.Nil(t, tc.opts.Clock, "Open must not change the caller's Options")
			}
			want := int64(wal.DefaultMaxBytes)
			if tc.opts != nil && tc.opts.MaxBytes != 0 {
				want = tc.opts.MaxBytes
			}
			require.Equal(t, want, w.Stats().MaxBytes)
		})
	}
}

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	for _, p := range []wal.Policy{wal.DropOldest, wal.DropNewest, wal.Block} {
		got, err := wal.ParsePolicy(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	_, err := wal.ParsePolicy("drop-everything")
	require.Error(t, err)
	require.Contains(t, err.Error(), "drop-everything")
}

// lockHelperEnv makes the test binary, re-executed, hold a spool's lock: it
// opens the spool named by the variable, says "locked" on stdout and keeps the
// spool open until its stdin is closed.
const lockHelperEnv = "EVSPOOL_WAL_TEST_LOCK_HOLDER"

func TestLockHolderHelper(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestOpenLockedByAnotherProcess")
	}
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = w.Close()
	os.Exit(0)
}

// TestOpenLockedByAnotherProcess: a spool held by another process fails
// within a second or two with ErrLocked and a message naming the spool; once
// the other process is gone, Open succeeds.
// Not parallel: it times how long Open waits for the lock.
func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderHelper$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	start := time.Now()
	_, err = wal.Open(dir, nil)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, wal.ErrLocked)
	require.Contains(t, err.Error(), dir)
	require.Less(t, elapsed, 2500*time.Millisecond)
	require.GreaterOrEqual(t, elapsed, wal.DefaultLockTimeout/2, "Open should wait for the lock a while")

	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	w, err := wal.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

// TestOpenLockedInProcess: flock is per open file description, so a second
// Open in the same process is refused too, and works once the first is closed.
func TestOpenLockedInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = wal.Open(dir, &wal.Options{NoSync: true, LockTimeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, wal.ErrLocked)
	require.Contains(t, err.Error(), dir)
	require.NoError(t, w.Close())
	w2, err := wal.Open(dir, &wal.Options{NoSync: true, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w2.Close())
}

func TestClosed(t *testing.T) {
	t.Parallel()
	w, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("x"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "a second Close returns nil")

	calls := map[string]func() error{
		"Append":  func() error { _, err := w.Append(context.Background(), []byte("y")); return err },
		"Read":    func() error { _, err := w.Read(0, 1, 0); return err },
		"Ack":     func() error { return w.Ack(1) },
		"Compact": func() error { return w.Compact() },
		"Repair":  func() error { _, err := w.Repair(errors.New("test")); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), wal.ErrClosed)
		})
	}
	require.True(t, strings.HasPrefix(wal.ErrClosed.Error(), "wal: "))
}
