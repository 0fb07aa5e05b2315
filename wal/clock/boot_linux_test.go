package clock

import (
	"errors"
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

// kernel is a CLOCK_BOOTTIME a test sets, counting its readings.
type kernel struct {
	boot  time.Duration
	err   error
	reads int
}

func (k *kernel) read() (time.Duration, error) { k.reads++; return k.boot, k.err }

// TestBootClockRereads: what the monotonic and wall readings since the last
// CLOCK_BOOTTIME reading make the boot clock do.
func TestBootClockRereads(t *testing.T) {
	t.Parallel()
	const wall0, boot0 = 1_800_000_000 * time.Second, time.Hour
	ms := time.Millisecond
	cases := []struct {
		name             string
		mono, wall, boot time.Duration // the next readings, from the first
		kernelErr        error
		want             time.Duration
		reads            int
	}{
		{"carried forward", 300 * ms, 300 * ms, 300 * ms, nil, boot0 + 300*ms, 1},
		{"carried through a frequency correction", 900 * ms, 900*ms + ms/2, 900 * ms, nil, boot0 + 900*ms, 1},
		{"a suspend of 10 s: the wall moved, the monotonic clock did not", 0, 10 * time.Second, 10 * time.Second, nil, boot0 + 10*time.Second, 2},
		{"a suspend within a carried second", 400 * ms, 10*time.Second + 400*ms, 10*time.Second + 400*ms, nil, boot0 + 10*time.Second + 400*ms, 2},
		{"a wall step back reads again", 200 * ms, -time.Hour, 200 * ms, nil, boot0 + 200*ms, 2},
		{"read again after bootReadEvery", bootReadEvery, bootReadEvery, bootReadEvery + 7*ms, nil, boot0 + bootReadEvery + 7*ms, 2},
		{"never behind a reading handed out", bootReadEvery, bootReadEvery, bootReadEvery - 3*ms, nil, boot0 + bootReadEvery, 2},
		{"refused: the monotonic clock since the process started", 2 * time.Second, 2 * time.Second, 0, errors.New("refused"), 2 * time.Second, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &kernel{boot: boot0}
			b := bootClock{read: k.read}
			require.Equal(t, boot0, b.at(0, wall0))
			k.boot, k.err = boot0+tc.boot, tc.kernelErr
			assert.Equal(t, tc.want, b.at(tc.mono, wall0+tc.wall))
			assert.Equal(t, tc.reads, k.reads, "CLOCK_BOOTTIME readings")
		})
	}
}

// BenchmarkBootTime is a Boot reading as System hands it out: mostly
// carried forward on the monotonic clock.
func BenchmarkBootTime(b *testing.B) {
	for b.Loop() {
		_ = bootTime()
	}
}

// BenchmarkReadBoottime is the system call a carried reading saves.
func BenchmarkReadBoottime(b *testing.B) {
	for b.Loop() {
		_, _ = readBoottime()
	}
}
