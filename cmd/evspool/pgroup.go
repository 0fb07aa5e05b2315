package main

import (
	"log/slog"
	"os"
	"syscall"
)

// COMMAND runs in a process group of its own (Setpgid, group id = its pid),
// like timeout(1): signals go to the whole group, so a shell's children get
// them too, and the kill after a stop signal kills them all. What is left
// of the group when COMMAND has exited (a background child) is killed
// before evspool goes on, so no child of COMMAND outlives evspool. A child
// that left the group (setsid, setpgid) is out of reach, as for timeout(1).

// signalGroup sends sig to COMMAND's process group.
func (c *child) signalGroup(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, s)
}

// killGroup kills COMMAND's process group.
func (c *child) killGroup() { c.signalGroup(syscall.SIGKILL) }

// reapGroup kills what is left of COMMAND's process group once COMMAND has
// exited, and says so when something was.
func (c *child) reapGroup(logger *slog.Logger) {
	err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		return // ESRCH, the group is empty: the usual case
	}
	logger.Warn("the command exited but processes of its group were still running; killed them",
		"process_group", c.cmd.Process.Pid)
}
