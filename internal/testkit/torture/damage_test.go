package torture

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// spoolWith leaves n events spooled in a new spool (no receiver: run exits 3).
func spoolWith(t *testing.T, sock, spool string, n int) []string {
	t.Helper()
	var in strings.Builder
	var sent []string
	for i := 0; i < n; i++ {
		sent = append(sent, event(i))
		in.WriteString(event(i) + "\n")
	}
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--drain-timeout", "100ms", "--fsync=false")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 3, ee.ExitCode(), "%s", out)
	return sent
}

type corruption struct {
	name    string
	damage  func(t *testing.T, path string)
	salvage bool // a damaged file must be kept aside
}

var corruptions = []corruption{
	{"truncated to half", func(t *testing.T, p string) { truncate(t, p, fileSize(t, p)/2) }, true},
	{"truncated to one page", func(t *testing.T, p string) { truncate(t, p, 4096) }, true},
	{"zeroed header pages", func(t *testing.T, p string) { overwrite(t, p, 0, make([]byte, 2*4096)) }, true},
	{"random bytes in a data page", func(t *testing.T, p string) { overwrite(t, p, 6*4096+512, noise(2048)) }, true},
	{"not a bbolt file", func(t *testing.T, p string) {
		require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("this is not a spool\n"), 500), 0o600))
	}, true},
	// bbolt initialises an empty file as a new database: nothing to keep.
	{"empty file", func(t *testing.T, p string) { truncate(t, p, 0) }, false},
}

// A damaged spool under the CLI: no panic, no crash loop, the damaged file
// kept aside, what is readable salvaged and delivered, new events flow, and
// every event the salvage could not read counted as lost (exit 4) by the run
// that salvaged, and only by it.
func TestDamagedSpoolCLI(t *testing.T) {
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sock, spool := filepath.Join(dir, "s.sock"), filepath.Join(dir, "spool")
			old := spoolWith(t, sock, spool, 2000)
			c.damage(t, filepath.Join(spool, "spool.db"))

			rcv, err := refrecv.Start("unix", sock, nil)
			require.NoError(t, err)
			defer rcv.Close()
			unreadable := 0
			for round := 0; round < 2; round++ { // the second run proves there is no crash loop
				fresh := fmt.Sprintf("fresh event after damage, round %d", round)
				// The receiver records lines as it reads them: no need to linger.
				cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--replay-linger", "20ms")
				cmd.Stdin = strings.NewReader(fresh + "\n")
				out, err := cmd.CombinedOutput()
				require.NotContains(t, string(out), "panic")
				if m := lostUnreadable.FindStringSubmatch(string(out)); round == 0 && m != nil {
					unreadable, _ = strconv.Atoi(m[1])
					var ee *exec.ExitError
					require.ErrorAs(t, err, &ee, "%s", out)
					require.Equal(t, 4, ee.ExitCode(), "unreadable events are lost: %s", out)
				} else {
					require.NoError(t, err, "%s", out)
				}
				if round == 0 && c.salvage {
					require.Contains(t, string(out), "spool was damaged and has been salvaged")
				}
				if round == 1 {
					require.NotContains(t, string(out), "damaged", "salvaged once, then sound")
				}
				require.Eventually(t, func() bool { return contains(rcv.Lines(), fresh) }, 5*time.Second, 5*time.Millisecond)
			}
			kept, _ := filepath.Glob(filepath.Join(spool, "*corrupt*"))
			if c.salvage {
				require.Len(t, kept, 1, "the damaged file is kept for inspection")
			}
			// What was salvaged arrived in order, before the fresh events.
			got := rcv.Lines()
			var recovered []string
			for _, l := range got {
				if eventID(l) >= 0 {
					recovered = append(recovered, l)
				}
			}
			require.True(t, isOrderedSubset(recovered, old), "salvaged events in order")
			require.Equal(t, len(old)-len(recovered), unreadable, "every event not recovered is counted lost, once")
			t.Logf("%s: %d of %d spooled events recovered, %d counted unreadable", c.name, len(recovered), len(old), unreadable)
		})
	}
}

// lostUnreadable finds the count of unreadable events in the final line.
var lostUnreadable = regexp.MustCompile(`msg="events were lost" .* unreadable=(\d+)`)

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// isOrderedSubset reports whether sub is a subsequence of all.
func isOrderedSubset(sub, all []string) bool {
	i := 0
	for _, s := range sub {
		for i < len(all) && all[i] != s {
			i++
		}
		if i == len(all) {
			return false
		}
		i++
	}
	return true
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Size()
}

func truncate(t *testing.T, p string, n int64) { require.NoError(t, os.Truncate(p, n)) }

func overwrite(t *testing.T, p string, off int64, b []byte) {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

func noise(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
