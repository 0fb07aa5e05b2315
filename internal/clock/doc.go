// Package clock is the one time source of evspool's timing code, so that
// tests step time instead of sleeping, and so that ages are measured on a
// clock that wall-clock steps do not move.
//
// A Clock has two readings. Now is the wall clock: it stamps records and
// log lines, and it is what a person reads; on a PTP node phc2sys steps it,
// by seconds or by years. Boot is CLOCK_BOOTTIME: it counts from the
// machine's boot, keeps counting through suspend, survives a process
// restart, and no step of the wall clock moves it. Boot readings taken in
// different boots cannot be compared; BootID tells boots apart.
//
// System is the real clock. Fake is a clock a test moves by hand: Advance
// moves both readings and fires the timers that fall due, StepWall moves
// the wall clock alone, as phc2sys does, and Reboot starts a new boot.
package clock
