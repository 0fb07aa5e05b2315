package clock

import "time"

// Clock is what evspool reads the time from and waits on. Its methods are
// called from many goroutines at once. A program may implement it, to run
// evspool on a clock of its own; Boot must never go back within a BootID.
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
	// NewTimer is time.NewTimer on this clock: its channel receives once d
	// has passed on Boot's clock (at once for d <= 0).
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that evspool uses.
type Timer interface {
	// C receives the time once the timer fires; it holds at most one value.
	C() <-chan time.Time
	// Stop and Reset behave as time.Timer's (Go 1.23 semantics: no stale
	// value is received after either returns).
	Stop() bool
	Reset(d time.Duration) bool
}
