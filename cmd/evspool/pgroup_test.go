package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gone reports whether pid has exited (a zombie nobody reaped counts).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// No child of the command outlives evspool. Before: SIGTERM reached the
// shell only, which died, and `sleep` ran on, orphaned.
func TestExecOwnsItsProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		term         bool
	}{
		{"SIGTERM while a grandchild runs", `sleep 100 & echo "grandchild $!"; wait $!; echo done`, true},
		{"the command exits, a background child stays", `sleep 100 & echo "grandchild $!"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock, spool := paths(t)
			startSink(t, sock)
			p := start(t, "exec", "--socket", sock, "--spool", spool, "--fsync=false", "--", "sh", "-c", tc.script)
			var pid int
			require.Eventually(t, func() bool {
				for _, l := range p.echoed() {
					if n, ok := strings.CutPrefix(l, "grandchild "); ok {
						pid, _ = strconv.Atoi(n)
						return true
					}
				}
				return false
			}, 10*time.Second, 5*time.Millisecond)
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			require.False(t, gone(pid), "the grandchild runs")
			if tc.term {
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			}
			code := p.wait(t, 10*time.Second)
			if tc.term {
				require.Equal(t, 128+int(syscall.SIGTERM), code, p.logs())
			}
			require.Eventually(t, func() bool { return gone(pid) }, 2*time.Second, 5*time.Millisecond,
				"grandchild %d outlived evspool; logs:\n%s", pid, p.logs())
			require.NotContains(t, strings.Join(p.echoed(), "\n"), "done")
		})
	}
}
