package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// processStart anchors the fallback should CLOCK_BOOTTIME be refused.
var processStart = time.Now()

func bootTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Since(processStart)
	}
	return time.Duration(ts.Nano())
}
