package clock

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// processStart anchors the monotonic readings, and the fallback should
// CLOCK_BOOTTIME be refused.
var processStart = time.Now()

const (
	// bootReadEvery is how long a CLOCK_BOOTTIME reading is carried forward
	// on the monotonic clock before it is read again.
	bootReadEvery = time.Second
	// bootDrift is how far the wall clock may run from the monotonic clock
	// between two readings before CLOCK_BOOTTIME is read again: a suspend
	// stops the monotonic clock, not the wall clock (a wall step reads it
	// again too, which is harmless). A frequency correction moves them apart
	// by at most 0.5 ms a second.
	bootDrift = 5 * time.Millisecond
)

// bootClock is CLOCK_BOOTTIME, which x/sys reads with a system call (no
// vDSO path). It runs as the monotonic clock, which time.Now reads without
// one, except while the machine is suspended; so a reading is carried
// forward on the monotonic clock, and taken again once bootReadEvery has
// passed or the wall clock moved more than bootDrift away from the
// monotonic one. A resume is seen at the first reading after it (a suspend
// shorter than bootDrift may be missed), and Boot never goes back.
type bootClock struct {
	read func() (time.Duration, error) // CLOCK_BOOTTIME
	last atomic.Pointer[bootRead]
}

// bootRead is a CLOCK_BOOTTIME reading and the monotonic (since
// processStart) and wall (Unix) times it was taken at.
type bootRead struct {
	mono, wall, boot time.Duration
}

var systemBoot = bootClock{read: readBoottime}

func bootTime() time.Duration {
	now := time.Now()
	return systemBoot.at(now.Sub(processStart), time.Duration(now.UnixNano()))
}

func readBoottime() (time.Duration, error) {
	var ts unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano()), err
}

// at is the boot time at monotonic time mono and wall time wall.
func (b *bootClock) at(mono, wall time.Duration) time.Duration {
	old := b.last.Load()
	if old != nil {
		since, drift := mono-old.mono, wall-old.wall-(mono-old.mono)
		if since >= 0 && since < bootReadEvery && drift <= bootDrift && drift >= -bootDrift {
			return old.boot + since
		}
	}
	boot, err := b.read()
	if err != nil {
		return mono
	}
	r := &bootRead{mono: mono, wall: wall, boot: boot}
	if old != nil && r.boot < old.boot+mono-old.mono {
		r.boot = old.boot + mono - old.mono // never behind a reading handed out
	}
	b.last.Store(r)
	return r.boot
}
