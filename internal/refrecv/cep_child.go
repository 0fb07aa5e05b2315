package refrecv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// CEP is a CEPConfig receiver running in a child process (the test binary
// itself, whose TestMain calls MaybeRunCEP), so that it can die the way a
// real receiver does: SIGKILL frees whatever it had read but not handled,
// and whatever its sockets still held.
type CEP struct {
	cfg CEPConfig

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartCEP starts a CEP receiver child and returns once it listens.
func StartCEP(cfg CEPConfig) (*CEP, error) {
	c := &CEP{cfg: cfg}
	if err := c.Restart(); err != nil {
		return nil, err
	}
	return c, nil
}

// Restart starts the child again after Kill, and waits until it listens.
func (c *CEP) Restart() error {
	raw, err := json.Marshal(c.cfg)
	if err != nil {
		return err
	}
	before := c.Starts()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if c.cfg.NoASLR {
		cmd = exec.Command("setarch", "-R", os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), cepEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("refrecv: start cep receiver: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.mu.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for c.Starts() == before {
		select {
		case <-exited:
			if c.Starts() != before {
				// It started, then died within the tick: a crash-looping
				// receiver (CrashFirst) handling the first line it read.
				return nil
			}
			return fmt.Errorf("refrecv: cep receiver exited at start: %v", cmd.ProcessState)
		case <-deadline:
			return fmt.Errorf("refrecv: cep receiver not listening on %s after 10s", c.cfg.Addr)
		case <-tick.C:
		}
	}
	return nil
}

// Kill SIGKILLs the child and waits until it is gone. Killing a stopped
// receiver does nothing.
func (c *CEP) Kill() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Lines returns the lines the receiver has handled so far, across restarts,
// in order.
func (c *CEP) Lines() []string {
	b, err := os.ReadFile(c.cfg.Out)
	if err != nil || len(b) == 0 {
		return nil
	}
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return strings.Split(string(b), "\n")
}

// Starts returns how many times a receiver started listening: the first
// start, restarts after Kill, and re-executions on the restart line.
func (c *CEP) Starts() int {
	b, err := os.ReadFile(c.cfg.Starts())
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte{'\n'})
}
