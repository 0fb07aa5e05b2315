//go:build !linux

package refrecv

import "syscall"

// workerAttr: without Pdeathsig, a worker outlives a killed master.
func workerAttr() *syscall.SysProcAttr { return nil }
