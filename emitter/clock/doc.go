// Package clock is the one time source of evspool's timing code
// (emitter.Options.Clock; wal.Options.Clock needs its Now, Boot and BootID),
// so that tests step time instead of sleeping and ages are measured on a
// clock that wall-clock steps do not move. A program may implement Clock.
//
// A Clock has two readings: Now, the wall clock, which stamps records and
// log lines and which phc2sys may step by any amount; and Boot,
// CLOCK_BOOTTIME, which keeps counting through suspend and process restarts
// and which no wall-clock step moves. Boot readings of different boots
// (BootID) cannot be compared. System is the real clock; evspool's own tests
// use a fake one. System reads CLOCK_BOOTTIME with a system call at most once
// a second and carries it forward on the monotonic clock between: right after
// a resume from suspend its Boot lags by the suspension for up to a second.
package clock
