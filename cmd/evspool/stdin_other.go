//go:build !linux

package main

import "os"

// pollStdin returns os.Stdin as it is: reading a blocking stdin through
// the poller is done, and measured, on Linux only (kqueue does not report
// a FIFO's last writer going away on Darwin).
func pollStdin() (*os.File, func()) { return os.Stdin, func() {} }
