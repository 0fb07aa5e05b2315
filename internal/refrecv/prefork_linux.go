package refrecv

import "syscall"

// workerAttr makes a pre-fork worker die with its master.
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
