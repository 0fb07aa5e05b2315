package clock

import "time"

// Clock is what evspool reads the time from.
type Clock interface {
	// Now is the wall clock.
	Now() time.Time
	// Boot is the time since the machine booted (CLOCK_BOOTTIME): monotonic
	// across process restarts within a boot, unmoved by wall-clock steps.
	Boot() time.Duration
	// BootID names the current boot (/proc/sys/kernel/random/boot_id); ""
	// where it cannot be read, and then Boot readings are only comparable
	// within this process.
	BootID() string
	// NewTimer is time.NewTimer on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that evspool uses.
type Timer interface {
	C() <-chan time.Time
	// Stop and Reset behave as time.Timer's (Go 1.23 semantics: no stale
	// value is received after either returns).
	Stop() bool
	Reset(d time.Duration) bool
}
