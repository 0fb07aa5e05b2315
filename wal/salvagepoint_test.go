package wal

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// salvageChildHook is the child's Options.crashPoint: it kills the process
// at the named step of salvage (none if kill is empty).
func salvageChildHook(kill string) func(step string) {
	return func(step string) {
		if kill != "" && step == kill {
			_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}

// TestSalvageKilledAtStep kills the salvaging child after each step of the
// salvage: the fresh file written and synced, the damaged copy kept, the
// fresh file renamed over spool.db. Each time the next Open must end with
// what an uninterrupted salvage recovers, and keep the damaged copy.
func TestSalvageKilledAtStep(t *testing.T) {
	t.Parallel()
	dir, want := salvageFixture(t)
	for _, step := range []string{"salvage-rebuilt", "salvage-kept", "salvage-renamed"} {
		t.Run(step, func(t *testing.T) {
			d := salvageCopy(t, dir)
			killed, out := salvageRunChild(t, nil, d, step)
			require.True(t, killed, "the child was not killed at %s: %s", step, out)
			salvageCheck(t, d, want)
		})
	}
}
