package powercut

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// mountT mounts a fresh filesystem for a test, or skips where FUSE cannot be
// mounted.
func mountT(t *testing.T) *FS {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	f, err := Mount(t.TempDir())
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	t.Cleanup(func() { _ = f.Unmount() })
	return f
}

func cut(t *testing.T, f *FS, mode Mode, seed uint64) {
	t.Helper()
	require.NoError(t, f.PowerOff(mode, rand.New(rand.NewPCG(seed, 1))))
	require.NoError(t, f.PowerOn())
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func TestUnsyncedWriteLost(t *testing.T) {
	f := mountT(t)
	p := filepath.Join(f.Dir(), "a")
	writeFile(t, p, []byte("durable"), true)
	syncDir(t, f.Dir())
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = fh.WriteAt([]byte("DURABLE-and-more"), 0)
	require.NoError(t, err)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "DURABLE-and-more", string(got), "readers see the write at once")
	require.NoError(t, fh.Close())
	cut(t, f, Drop, 1)
	got, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "durable", string(got), "the unsynced write is gone")
}

func TestSyncedWriteKept(t *testing.T) {
	f := mountT(t)
	p := filepath.Join(f.Dir(), "a")
	writeFile(t, p, []byte("one"), true)
	syncDir(t, f.Dir())
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = fh.WriteAt([]byte("two"), 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Fdatasync(int(fh.Fd())))
	require.NoError(t, fh.Close())
	cut(t, f, Drop, 1)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
}

func TestCreateWithoutDirSyncLost(t *testing.T) {
	f := mountT(t)
	p := filepath.Join(f.Dir(), "a")
	writeFile(t, p, []byte("synced, but not its name"), true)
	require.NoError(t, os.Mkdir(filepath.Join(f.Dir(), "d"), 0o700))
	cut(t, f, Subset, 1)
	require.NoFileExists(t, p)
	require.NoDirExists(t, filepath.Join(f.Dir(), "d"))
}

func TestRenameWithoutDirSyncUndone(t *testing.T) {
	f := mountT(t)
	a, b := filepath.Join(f.Dir(), "a"), filepath.Join(f.Dir(), "b")
	writeFile(t, a, []byte("old"), true)
	writeFile(t, b, []byte("new"), true)
	syncDir(t, f.Dir())
	require.NoError(t, os.Rename(b, a))
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	cut(t, f, Drop, 1)
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	require.Equal(t, "old", string(got), "the rename is undone")
	require.FileExists(t, b)

	require.NoError(t, os.Rename(b, a))
	syncDir(t, f.Dir())
	cut(t, f, Drop, 1)
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	require.Equal(t, "new", string(got), "a synced rename is kept")
	require.NoFileExists(t, b)
}

func TestUnlinkAndLinkWithoutDirSyncUndone(t *testing.T) {
	f := mountT(t)
	a := filepath.Join(f.Dir(), "a")
	writeFile(t, a, []byte("x"), true)
	syncDir(t, f.Dir())
	require.NoError(t, os.Link(a, filepath.Join(f.Dir(), "l")))
	require.NoError(t, os.Remove(a))
	cut(t, f, Drop, 1)
	require.FileExists(t, a)
	require.NoFileExists(t, filepath.Join(f.Dir(), "l"))
}

// TestPartialCuts: Tear keeps a prefix of the pending writes, Subset a
// random subset of their pages; over many seeds both keep some and lose
// some, and never invent bytes that were not written.
func TestPartialCuts(t *testing.T) {
	f := mountT(t)
	p := filepath.Join(f.Dir(), "a")
	base := bytes.Repeat([]byte{'.'}, 8*PageSize)
	for _, mode := range []Mode{Tear, Subset} {
		sawKept, sawLost := false, false
		for seed := uint64(0); seed < 10; seed++ {
			writeFile(t, p, base, true)
			syncDir(t, f.Dir())
			fh, err := os.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			for i := 0; i < 8; i++ {
				_, err = fh.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, PageSize), int64(i*PageSize))
				require.NoError(t, err)
			}
			require.NoError(t, fh.Close())
			cut(t, f, mode, seed)
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Len(t, got, len(base))
			for i := 0; i < 8; i++ {
				pg := got[i*PageSize : (i+1)*PageSize]
				switch {
				case bytes.Equal(pg, base[:PageSize]):
					sawLost = true
				case bytes.Equal(pg, bytes.Repeat([]byte{byte('a' + i)}, PageSize)):
					sawKept = true
				default:
					t.Fatalf("%v: page %d holds bytes never written whole", mode, i)
				}
			}
		}
		require.True(t, sawKept && sawLost, "%v keeps some pending pages and loses some", mode)
	}
}

// TestWriteback: what was written before a writeback survives a cut without
// any fsync; what was written after it does not.
func TestWriteback(t *testing.T) {
	f := mountT(t)
	require.NoError(t, os.Mkdir(filepath.Join(f.Dir(), "d"), 0o700))
	p := filepath.Join(f.Dir(), "d", "a")
	writeFile(t, p, []byte("before"), false)
	require.NoError(t, f.Writeback())
	writeFile(t, filepath.Join(f.Dir(), "d", "b"), []byte("after"), true)
	cut(t, f, Drop, 1)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "before", string(got))
	require.NoFileExists(t, filepath.Join(f.Dir(), "d", "b"))
}

// TestWritesFailWhilePoweredOff: after PowerOff nothing more reaches the
// filesystem.
func TestWritesFailWhilePoweredOff(t *testing.T) {
	f := mountT(t)
	p := filepath.Join(f.Dir(), "a")
	writeFile(t, p, []byte("x"), true)
	syncDir(t, f.Dir())
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.PowerOff(Drop, rand.New(rand.NewPCG(1, 1))))
	_, err = fh.WriteAt([]byte("y"), 0)
	if err == nil {
		err = fh.Sync()
	}
	require.Error(t, err)
	_ = fh.Close()
	require.NoError(t, f.PowerOn())
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

// TestBoltOnPowercut: bbolt reads its file through a shared read-only mmap
// and writes it with pwrite: the mapping must see the writes. A committed
// transaction (bbolt fdatasyncs) survives a cut once the directory entry is
// durable; one made with NoSync does not. bbolt runs in a child process: a
// Go process must not map files of a FUSE filesystem it serves itself (a
// page fault waiting on the server blocks the garbage collector's
// stop-the-world, and with it the server).
func TestBoltOnPowercut(t *testing.T) {
	f := mountT(t)
	path := filepath.Join(f.Dir(), "bolt.db")
	out := runChild(t, "bolt-write", path)
	require.Contains(t, out, "keys 500", "reads through mmap see the writes")
	require.NoError(t, f.PowerOff(Drop, rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, f.PowerOn())
	out = runChild(t, "bolt-check", path)
	require.Contains(t, out, "keys 500", "the synced commit survives, the unsynced one does not")
}

// boltChild runs the child side of TestBoltOnPowercut.
func boltChild(scenario, path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	if scenario == "bolt-write" {
		d, err := os.Open(filepath.Dir(path))
		if err != nil {
			return err
		}
		if err := d.Sync(); err != nil {
			return err
		}
		d.Close()
		val := bytes.Repeat([]byte("v"), 3000)
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("b"))
			if err != nil {
				return err
			}
			for i := 0; i < 500; i++ {
				if err := b.Put([]byte{byte(i >> 8), byte(i)}, val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := boltKeys(db); err != nil {
			return err
		}
		db.NoSync = true
		return db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("late"), val) })
	}
	return boltKeys(db)
}

func boltKeys(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		if b == nil {
			return errors.New("bucket missing")
		}
		fmt.Printf("keys %d\n", b.Stats().KeyN)
		return nil
	})
}
