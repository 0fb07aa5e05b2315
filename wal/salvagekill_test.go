package wal

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The salvage crash tests: a spool of 5,000 pending events with one damaged
// page is opened by a child process, which salvages it, and the child is
// killed part-way: by strace's fault injection at a chosen syscall (skipped
// without strace), or at named steps of the salvage (see crashPoint). The
// parent then opens the spool itself: it must hold exactly what a salvage
// left alone recovers. Salvage used to move spool.db aside first and rebuild
// it in place: killed at the first unlinkat or at the 5th pwrite64, the next
// Open found no spool.db, or a partial one, took it as sound, and every
// event was gone.
const (
	salvageEnvDir  = "EVSPOOL_WAL_SALVAGE_DIR"  // set: run as the child, on this spool
	salvageEnvKill = "EVSPOOL_WAL_SALVAGE_KILL" // the crash point to die at, if any
	salvageEvents  = 5000
)

// TestSalvageChild is the child of the salvage crash tests; run on its own
// it does nothing.
func TestSalvageChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(salvageEnvDir)
	if dir == "" {
		return
	}
	w, err := Open(dir, &Options{crashPoint: salvageChildHook(os.Getenv(salvageEnvKill))})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	fmt.Println("salvaged:", w.Salvaged() != nil)
	if err := w.Close(); err != nil {
		fmt.Println("close failed:", err)
		os.Exit(3)
	}
	fmt.Println("done")
}

// salvageFixture writes a spool of salvageEvents pending events, damages a
// page in the middle of it, and returns its directory and the sequence
// numbers a salvage recovers from it (on a copy, with no crash).
func salvageFixture(t *testing.T) (string, []uint64) {
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	for i := 0; i < salvageEvents; i += 250 {
		batch := make([][]byte, 250)
		for j := range batch {
			batch[j] = crashPayload(fmt.Sprintf("e%d", i+j))
		}
		_, err := w.Append(context.Background(), batch...)
		require.NoError(t, err)
	}
	require.NoError(t, w.SetValues(map[string][]byte{"reported_unreadable_events": make([]byte, 8)}))
	require.NoError(t, w.Close())
	path := filepath.Join(dir, fileName)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// Random bytes over one page of records in the middle of the file.
	at := bytes.Index(raw, crashPayload("e2500"))
	require.Positive(t, at)
	at -= at % 4096
	rng := rand.New(rand.NewPCG(1, 2))
	for i := at; i < at+4096; i++ {
		raw[i] = byte(rng.Uint32())
	}
	require.NoError(t, os.WriteFile(path, raw, 0o600))

	ctl := salvageCopy(t, dir)
	w, err = Open(ctl, &Options{NoSync: true})
	require.NoError(t, err)
	require.NotNil(t, w.Salvaged(), "the damage is found")
	want := salvageSeqs(t, w)
	require.NoError(t, w.Close())
	require.Greater(t, len(want), salvageEvents*9/10)
	require.Less(t, len(want), salvageEvents)
	return dir, want
}

// salvageCopy copies the spool directory's files into a new directory.
func salvageCopy(t *testing.T, src string) string {
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600))
	}
	return dst
}

func salvageSeqs(t *testing.T, w *WAL) []uint64 {
	var seqs []uint64
	for _, e := range crashReadAll(t, w) {
		seqs = append(seqs, e.Seq)
	}
	return seqs
}

// salvageRunChild runs the child on dir, under the command prefix (strace),
// and says whether it was killed before it finished.
func salvageRunChild(t *testing.T, prefix []string, dir, kill string) (killed bool, out string) {
	args := append(prefix, os.Args[0], "-test.run=^TestSalvageChild$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), salvageEnvDir+"="+dir, salvageEnvKill+"="+kill)
	b, _ := cmd.CombinedOutput()
	out = string(b)
	require.NotContains(t, out, "failed", "the child failed")
	return !strings.Contains(out, "done"), out
}

// salvageCheck opens the spool after the child's crash: it must hold what
// the salvage without a crash recovered, and reopen sound.
func salvageCheck(t *testing.T, dir string, want []uint64) {
	w, err := Open(dir, nil)
	require.NoError(t, err)
	got := salvageSeqs(t, w)
	require.Equal(t, len(want), len(got), "events after the interrupted salvage (a salvage left alone keeps %d)", len(want))
	require.Equal(t, want, got)
	// The events the salvage could not read are counted once, wherever the
	// child died: by its salvage, or by this Open's, never by both.
	require.EqualValues(t, salvageEvents-len(want), w.Stats().Unreadable, "unreadable events counted exactly once")
	reported, err := w.Value("reported_unreadable_events")
	require.NoError(t, err)
	require.Equal(t, make([]byte, 8), reported, "the user's values are kept as they were: none reported yet")
	require.NoError(t, w.Close())
	copies, _ := filepath.Glob(filepath.Join(dir, fileName+".corrupt-*"))
	require.NotEmpty(t, copies, "the damaged copy is kept")
}

// TestSalvageKilledBySyscall kills the salvaging child with strace's fault
// injection at the Nth call of a syscall (strace counts per thread).
func TestSalvageKilledBySyscall(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace): the syscall fault injection cannot run")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (ptrace not permitted?): %v %s", err, out)
	}
	dir, want := salvageFixture(t)
	t.Logf("a salvage left alone recovers %d of %d events", len(want), salvageEvents)
	for _, tc := range []struct {
		syscall string
		when    int
	}{
		{"unlinkat", 1}, {"renameat", 1}, {"linkat", 1},
		{"pwrite64", 1}, {"pwrite64", 5}, {"pwrite64", 50}, {"pwrite64", 100},
		{"fdatasync", 1}, {"fdatasync", 2}, {"fdatasync", 3},
		{"fsync", 1}, {"fsync", 2}, {"fsync", 3}, {"fsync", 4},
	} {
		name := fmt.Sprintf("%s#%d", tc.syscall, tc.when)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := salvageCopy(t, dir)
			prefix := []string{strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=" + tc.syscall,
				"-e", fmt.Sprintf("inject=%s:signal=SIGKILL:when=%d", tc.syscall, tc.when)}
			killed, out := salvageRunChild(t, prefix, d, "")
			t.Logf("killed: %v (%s)", killed, strings.TrimSpace(out))
			salvageCheck(t, d, want)
		})
	}
}
