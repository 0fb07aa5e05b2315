package refrecv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PreFork is a pre-fork receiver running as a child process of the test
// binary (whose TestMain calls MaybeRunPreFork): the master, which
// listens, and its current worker, which accepts and reads.
type PreFork struct {
	cfg    PreForkConfig
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartPreFork starts the master and returns once its first worker accepts.
func StartPreFork(cfg PreForkConfig) (*PreFork, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), preForkEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("refrecv: start pre-fork master: %w", err)
	}
	p := &PreFork{cfg: cfg, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.awaitWorkers(1); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// Master is the pid of the process that listens: what SO_PEERCRED names.
func (p *PreFork) Master() int { return p.cmd.Process.Pid }

// Workers returns the pids of the workers started so far, the current one
// last.
func (p *PreFork) Workers() []int {
	b, err := os.ReadFile(p.cfg.Workers())
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// KillWorker SIGKILLs the current worker, losing what it read but had not
// handled and what its connections still held, and returns once the
// master's next worker accepts on the same listener.
func (p *PreFork) KillWorker() error {
	w := p.Workers()
	if len(w) == 0 {
		return fmt.Errorf("refrecv: no pre-fork worker running")
	}
	if err := syscall.Kill(w[len(w)-1], syscall.SIGKILL); err != nil {
		return fmt.Errorf("refrecv: kill worker %d: %w", w[len(w)-1], err)
	}
	return p.awaitWorkers(len(w) + 1)
}

// awaitWorkers waits until n workers have started.
func (p *PreFork) awaitWorkers(n int) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for len(p.Workers()) < n {
		select {
		case <-p.exited:
			return fmt.Errorf("refrecv: pre-fork master exited: %v", p.cmd.ProcessState)
		case <-deadline:
			return fmt.Errorf("refrecv: pre-fork worker %d not accepting on %s after 10s", n, p.cfg.Addr)
		case <-tick.C:
		}
	}
	return nil
}

// Kill SIGKILLs the master (its worker dies with it) and waits until it is
// gone.
func (p *PreFork) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Lines returns the lines the workers have handled, in order.
func (p *PreFork) Lines() []string {
	b, err := os.ReadFile(p.cfg.Out)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte{'\n'})), "\n")
}
