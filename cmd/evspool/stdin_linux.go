package main

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// pollStdin returns the reader of fd 0 that run reads its events from, and
// restore, which puts fd 0's O_NONBLOCK back as it found it. restore may be
// called more than once and from any goroutine.
//
// When fd 0 is a pipe (or FIFO) or a socket, pollStdin sets O_NONBLOCK and
// wraps fd 0 in a new *os.File, which Go then registers with its poller
// (epoll): the reader goroutine parks in the poller instead of holding a
// thread blocked in read(2), and the runtime no longer wakes a thread and
// sysmon for every line: a third of run's CPU at 100 lines/s, 15% at
// 1,000 (bench/README.md, cli-cost: evspool run / syslog-ng, with the
// blocking read and without).
//
// O_NONBLOCK belongs to the open file description, shared by every process
// that inherited the same fd, so it is left alone when
//   - fd 0 is anything else: a terminal (shared with the shell that runs
//     evspool), a regular file or a device, where epoll brings nothing;
//   - it is already set: Go's os.Stdin reads through the poller already;
//   - fd 0 is the same pipe or socket as fd 1 or fd 2 (a connection passed
//     as stdin and stdout, as inetd does): the flag would make os.Stdout's
//     blocking writes fail with EAGAIN.
//
// Only run calls it: exec's stdin is its command's, which must find it as
// it was. docs/operations.md ("stdin") says what another process holding
// the same description sees, and what is left when evspool is killed.
func pollStdin() (*os.File, func()) {
	if !pollableStdin() {
		return os.Stdin, func() {}
	}
	if err := unix.SetNonblock(0, true); err != nil {
		return os.Stdin, func() {}
	}
	// NewFile sees O_NONBLOCK and registers fd 0 with the poller. The file
	// must stay reachable until restore: its finalizer closes fd 0.
	f := os.NewFile(0, "/dev/stdin")
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if rc, err := f.SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
			}
		})
	}
	// A file the poller did not take has no deadlines; read through it, it
	// would return EAGAIN: make it blocking again and read it as before.
	if f.SetReadDeadline(time.Time{}) != nil {
		restore()
	}
	return f, restore
}

// pollableStdin reports whether fd 0 is a blocking pipe or socket that is
// neither fd 1 nor fd 2.
func pollableStdin() bool {
	var in unix.Stat_t
	if unix.Fstat(0, &in) != nil {
		return false
	}
	if t := in.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return false
	}
	for _, fd := range []int{1, 2} {
		var out unix.Stat_t
		if unix.Fstat(fd, &out) == nil && out.Dev == in.Dev && out.Ino == in.Ino {
			return false
		}
	}
	flags, err := unix.FcntlInt(0, unix.F_GETFL, 0)
	return err == nil && flags&unix.O_NONBLOCK == 0
}
