package wal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// outside is a file outside the spool that a planted link points to: it
// must keep its bytes and mode whatever evspool does.
type outside struct {
	path string
	data []byte
}

func newOutside(t *testing.T) outside {
	t.Helper()
	o := outside{path: filepath.Join(t.TempDir(), "root-owned"), data: []byte("a file of root's, not evspool's\n")}
	require.NoError(t, os.WriteFile(o.path, o.data, 0o644))
	return o
}

func (o outside) untouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(o.path)
	require.NoError(t, err)
	require.Equal(t, o.data, b, "written through a link")
	fi, err := os.Stat(o.path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

// TestOpenRefusesPlantedLinks: a link where Open would open or create one of
// the spool's files (to an existing file outside, or to a name that does not
// exist yet) is refused with ErrUnsafeFile naming it, never followed: the
// file it points to keeps its bytes, a missing target is not created.
func TestOpenRefusesPlantedLinks(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lock", "marks", "spool.db"} {
		for _, dangling := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s dangling=%v", name, dangling), func(t *testing.T) {
				t.Parallel()
				o := newOutside(t)
				target := o.path
				if dangling {
					target = filepath.Join(filepath.Dir(o.path), "new-file")
				}
				dir := filepath.Join(t.TempDir(), "spool")
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
				_, err := wal.Open(dir, &wal.Options{NoSync: true})
				require.ErrorIs(t, err, wal.ErrUnsafeFile)
				require.ErrorContains(t, err, filepath.Join(dir, name)+" is a symbolic link to "+target)
				require.ErrorContains(t, err, "remove it")
				o.untouched(t)
				require.NoFileExists(t, filepath.Join(filepath.Dir(o.path), "new-file"))
			})
		}
	}
}

// TestOpenRefusesNonRegular: a FIFO or a directory where a spool file should
// be is refused without blocking on it (a FIFO's open waits for a writer).
func TestOpenRefusesNonRegular(t *testing.T) {
	t.Parallel()
	cases := map[string]func(string) error{
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for kind, mk := range cases {
		for _, name := range []string{"lock", "marks", "spool.db"} {
			t.Run(kind+" "+name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				require.NoError(t, mk(filepath.Join(dir, name)))
				done := make(chan error, 1)
				go func() {
					_, err := wal.Open(dir, &wal.Options{NoSync: true})
					done <- err
				}()
				select {
				case err := <-done:
					require.ErrorIs(t, err, wal.ErrUnsafeFile)
					want := map[string]string{"fifo": "a FIFO", "directory": "a directory"}[kind]
					require.ErrorContains(t, err, filepath.Join(dir, name)+" is "+want)
				case <-time.After(10 * time.Second):
					t.Fatal("Open blocked on a non-regular file")
				}
			})
		}
	}
}

// TestOpenRefusesOtherOwner: a spool directory that belongs to another user
// is refused (its owner could fill it with links), with a message naming the
// owner and what to do; nothing is created in it. Needs root to chown.
func TestOpenRefusesOtherOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.ErrorIs(t, err, wal.ErrDirOwner)
	require.ErrorContains(t, err, dir+" belongs to uid 65534")
	require.ErrorContains(t, err, "this process runs as uid 0")
	require.ErrorContains(t, err, "chown 0 "+dir)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing may be created in another user's directory")

	// The same directory given back to this user is accepted.
	require.NoError(t, os.Chown(dir, 0, 0))
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, w.Close())
}

// TestOpenRefusesLinkedDir: the spool path itself may not be a link: a
// planted one would choose the directory the spool writes in.
func TestOpenRefusesLinkedDir(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Symlink(real, link))
	_, err := wal.Open(link, &wal.Options{NoSync: true})
	require.ErrorIs(t, err, wal.ErrUnsafeDir)
	require.ErrorContains(t, err, link+" is a symbolic link (to "+real+")")
	entries, err := os.ReadDir(real)
	require.NoError(t, err)
	require.Empty(t, entries)
	_, _, err = wal.Inspect(link, 1)
	require.ErrorIs(t, err, wal.ErrUnsafeDir, "inspect does not follow it either")
}

// TestSpoolFilesRefuseLinks: the files a spool's user keeps in its
// directory (OpenFile, Rename, WriteFile, ReadFile) are never read or
// written through a link; a leftover of compaction that is
// a link is removed, its target left alone.
func TestSpoolFilesRefuseLinks(t *testing.T) {
	t.Parallel()
	plant := func(t *testing.T, name string) (string, outside) {
		o := newOutside(t)
		dir := t.TempDir()
		require.NoError(t, os.Symlink(o.path, filepath.Join(dir, name)))
		return dir, o
	}
	t.Run("side file", func(t *testing.T) {
		dir, o := plant(t, "receiver")
		_, err := wal.OpenFile(dir, "receiver", os.O_RDWR|os.O_CREATE)
		require.ErrorIs(t, err, wal.ErrUnsafeFile)
		_, err = wal.OpenFile(dir, "receiver", os.O_RDONLY)
		require.ErrorIs(t, err, wal.ErrUnsafeFile, "not read through it either")
		o.untouched(t)
	})
	t.Run("renamed over a link", func(t *testing.T) {
		dir, o := plant(t, "dead-letters.1")
		f, err := wal.OpenFile(dir, "dead-letters", os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, wal.Rename(dir, "dead-letters", "dead-letters.1"))
		fi, err := os.Lstat(filepath.Join(dir, "dead-letters.1"))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "the rename replaced the link")
		require.Equal(t, os.FileMode(0o600), fi.Mode())
		o.untouched(t)
	})
	t.Run("replaced file", func(t *testing.T) {
		dir, o := plant(t, "status.json")
		require.NoError(t, os.Symlink(o.path, filepath.Join(dir, "status.json.tmp")))
		require.NoError(t, wal.WriteFile(dir, "status.json", []byte("{}\n")))
		b, err := wal.ReadFile(dir, "status.json")
		require.NoError(t, err)
		require.Equal(t, "{}\n", string(b))
		fi, err := os.Lstat(filepath.Join(dir, "status.json"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode(), "a regular file of its own, 0600")
		o.untouched(t)
		require.NoError(t, os.Remove(filepath.Join(dir, "status.json")))
		require.NoError(t, os.Symlink(o.path, filepath.Join(dir, "status.json")))
		_, err = wal.ReadFile(dir, "status.json")
		require.ErrorIs(t, err, wal.ErrUnsafeFile)
	})
	t.Run("compaction leftover", func(t *testing.T) {
		dir, o := plant(t, "spool.db.compact")
		w, err := wal.Open(dir, &wal.Options{NoSync: true})
		require.NoError(t, err)
		_, err = w.Append(context.Background(), []byte("x"))
		require.NoError(t, err)
		require.NoError(t, w.Compact())
		require.NoError(t, w.Close())
		require.NoFileExists(t, filepath.Join(dir, "spool.db.compact"))
		o.untouched(t)
	})
}

// TestInspectRefusesLinks: inspect, read-only and often run by hand as
// root, reads no file through a planted link either.
func TestInspectRefusesLinks(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	w, err := wal.Open(src, &wal.Options{NoSync: true})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("secret"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(src, "spool.db"), filepath.Join(dir, "spool.db")))
	_, _, err = wal.Inspect(dir, 1)
	require.ErrorIs(t, err, wal.ErrUnsafeFile)
	require.ErrorContains(t, err, filepath.Join(dir, "spool.db")+" is a symbolic link")
}
