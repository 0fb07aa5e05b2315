package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A reading carried forward on the monotonic clock stays with the kernel's
// CLOCK_BOOTTIME (no suspend can happen in a test), across a fresh reading
// too, and never goes back.
func TestBootTimeFollowsTheKernelAcrossRereads(t *testing.T) {
	t.Parallel()
	var prev time.Duration
	for end := time.Now().Add(bootReadEvery + 200*time.Millisecond); time.Now().Before(end); {
		var before, after unix.Timespec
		require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &before))
		got := bootTime()
		require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &after))
		// Within the two kernel readings, give or take the rounding of a
		// reading taken a little after the monotonic time it is carried from.
		assert.GreaterOrEqual(t, got, time.Duration(before.Nano())-time.Millisecond)
		assert.LessOrEqual(t, got, time.Duration(after.Nano())+time.Millisecond)
		assert.GreaterOrEqual(t, got, prev, "went back")
		prev = got
		time.Sleep(10 * time.Millisecond)
	}
}
