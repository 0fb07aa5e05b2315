//go:build !linux

package clock

import "time"

// Without CLOCK_BOOTTIME, Boot counts from the process start.
var processStart = time.Now()

func bootTime() time.Duration { return time.Since(processStart) }
