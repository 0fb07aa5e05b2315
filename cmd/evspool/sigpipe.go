package main

import (
	"os"
	"os/signal"
	"syscall"
)

// ignoreSIGPIPE keeps a stdout reader that went away from killing evspool:
// a Go program that does not ask for SIGPIPE dies of it when a write to
// stdout finds no reader (exit 141, no final log line, lines read and not
// yet committed lost). Asked for, the write fails with EPIPE instead, which
// the emitter counts (evspool_echo_errors_total) and logs once; spooling
// and delivery go on. Notify rather than signal.Ignore: an ignored signal
// stays ignored in the command exec starts, a handled one does not.
func ignoreSIGPIPE() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
