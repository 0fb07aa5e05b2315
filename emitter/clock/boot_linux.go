package clock

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// processStart anchors the fallback should CLOCK_BOOTTIME be refused.
var processStart = time.Now()

// bootReadEvery is how long a CLOCK_BOOTTIME reading is carried forward on
// the monotonic clock before it is read again.
const bootReadEvery = time.Second

// bootRead is the last CLOCK_BOOTTIME reading and the monotonic time it was
// taken at.
type bootRead struct {
	at   time.Time
	boot time.Duration
}

var lastBoot atomic.Pointer[bootRead]

// bootTime is CLOCK_BOOTTIME, which x/sys reads with a system call (no vDSO
// path). It runs as the monotonic clock, which time.Now reads without one,
// except while the machine is suspended; so a reading is carried forward on
// the monotonic clock and taken again once bootReadEvery has passed. Right
// after a resume it lags by the suspension for at most that long, and it
// never goes back.
func bootTime() time.Duration {
	now := time.Now()
	if r := lastBoot.Load(); r != nil {
		if since := now.Sub(r.at); since >= 0 && since < bootReadEvery {
			return r.boot + since
		}
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Since(processStart)
	}
	r := &bootRead{at: now, boot: time.Duration(ts.Nano())}
	if old := lastBoot.Load(); old != nil && r.boot < old.boot+now.Sub(old.at) {
		r.boot = old.boot + now.Sub(old.at) // never behind a reading handed out
	}
	lastBoot.Store(r)
	return r.boot
}
