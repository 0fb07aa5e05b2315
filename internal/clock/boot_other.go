//go:build !linux

package clock

import "time"

// Without CLOCK_BOOTTIME, Boot is Go's monotonic clock since the process
// started, and BootID is "", so readings are comparable only within a
// process.
var processStart = time.Now()

func bootTime() time.Duration { return time.Since(processStart) }
