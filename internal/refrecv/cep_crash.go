package refrecv

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// crashing reports whether this start of a CEP receiver is one of the first
// cfg.CrashFirst (its own start already counted in the Starts file).
func crashing(cfg CEPConfig) bool {
	if cfg.CrashFirst <= 0 {
		return false
	}
	b, err := os.ReadFile(cfg.Starts())
	return err == nil && bytes.Count(b, []byte{'\n'}) <= cfg.CrashFirst
}

// Exited returns a channel closed when the child exits by itself (or is
// killed); nil if it is not running.
func (c *CEP) Exited() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	return c.exited
}

// Freeze stops the child (SIGSTOP), as a receiver whose reader is blocked:
// it reads nothing, its sockets stay open. Thaw resumes it.
func (c *CEP) Freeze() error { return c.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen child (SIGCONT).
func (c *CEP) Thaw() error { return c.signal(syscall.SIGCONT) }

func (c *CEP) signal(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return fmt.Errorf("refrecv: cep receiver not running")
	}
	return c.cmd.Process.Signal(sig)
}
