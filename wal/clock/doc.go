// Package clock is the one time source of evspool: the emitter and the
// spool read the time and wait only through a Clock (emitter.Options.Clock,
// wal.Options.Clock), so that tests step time instead of sleeping and ages
// are measured on a clock that wall-clock steps do not move. A program may
// implement Clock (see the example); a socket's deadline is the one reading
// taken from real time whatever the Clock, as Go's poller measures it on the
// system clock.
//
// A Clock has two readings: Now, the wall clock, which stamps records and
// log lines and which phc2sys may step by any amount; and Boot,
// CLOCK_BOOTTIME, which keeps counting through suspend and process restarts
// and which no wall-clock step moves. Boot readings of different boots
// (BootID) cannot be compared. System is the real clock; evspool's own tests
// use a fake one. System reads CLOCK_BOOTTIME with a system call at most once
// a second and carries it forward on the monotonic clock between, reading it
// again as soon as the wall clock runs away from the monotonic one (a resume
// from suspend, a wall step): a suspend does not shorten an age.
package clock
