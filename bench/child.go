package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a producer process as the harness sees it.
type child struct {
	cmd     *exec.Cmd
	spawned time.Time
	ready   chan struct{} // closed at the "ready" line (or at exit)
	idle    chan struct{} // closed at the "idle" line (-signalled)
	mem     chan int64    // the "mem" lines' counts (-signalled)
	exited  chan struct{} // closed once the process is reaped and its pipe read
	stderr  bytes.Buffer

	mu      sync.Mutex
	rep     report
	waitErr error
}

// report is what a producer process said on its report pipe.
type report struct {
	readyNs  int64
	ends     map[int]uint64 // producer -> sequence end handed over
	produced int64
	done     bool
	pending  int      // events still held after the drain
	dropped  uint64   // events the contender gave up on
	errs     uint64   // failed Emit calls
	compacts uint64   // spool compactions (evspool)
	calls    [3]int64 // Emit call duration p50, p99, max (ns)
}

// startChild re-executes this binary in producer mode with args.
func startChild(args []string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{ready: make(chan struct{}), idle: make(chan struct{}), mem: make(chan int64, 1), exited: make(chan struct{}), rep: report{ends: map[int]uint64{}}}
	if i := slices.Index(args, cEvspoolBase); i >= 0 {
		if exe = os.Getenv("EVSPOOL_BENCH_BASE"); exe == "" {
			return nil, fmt.Errorf("%s needs EVSPOOL_BENCH_BASE: the path of a bench binary built from the tree to compare with", cEvspoolBase)
		}
		args = slices.Clone(args)
		args[i] = cEvspoolFsync // that build's own evspool-fsync
	}
	c.cmd = exec.Command(exe, append([]string{"producer"}, args...)...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.spawned = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.parse(sc.Text())
		}
		err := c.cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(c.exited) // before ready: whoever wakes on ready sees the exit
		c.markReady()
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// failedToStart reports whether the process exited without saying "ready":
// the contender could not open (a spool it cannot read back, say).
func (c *child) failedToStart() bool {
	select {
	case <-c.exited:
		return c.snapshot().readyNs == 0
	default:
		return false
	}
}

func (c *child) markReady() {
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// parse applies one report line (see reporter).
func (c *child) parse(line string) {
	f := strings.Fields(line)
	num := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.rep
	switch {
	case len(f) == 0:
	case f[0] == "ready":
		r.readyNs = num(1)
		defer c.markReady()
	case f[0] == "acc":
		r.ends[int(num(1))] = uint64(num(2))
	case f[0] == "idle":
		close(c.idle)
	case f[0] == "mem":
		select {
		case c.mem <- num(1):
		default:
		}
	case f[0] == "produced":
		r.produced = num(1)
	case f[0] == "done":
		r.done, r.pending, r.dropped, r.errs = true, int(num(1)), uint64(num(2)), uint64(num(3))
		r.compacts, r.calls = uint64(num(4)), [3]int64{num(5), num(6), num(7)}
	}
}

// askMem asks a -signalled producer for the heap objects it allocated so
// far (SIGUSR2, answered by a "mem" line).
func (c *child) askMem() (int64, error) {
	select {
	case <-c.mem: // a stale answer
	default:
	}
	if err := c.signal(syscall.SIGUSR2); err != nil {
		return 0, err
	}
	select {
	case n := <-c.mem:
		return n, nil
	case <-c.exited:
		return 0, fmt.Errorf("producer exited: %s", c.tail())
	case <-time.After(2 * time.Second):
		return 0, errors.New("producer did not answer SIGUSR2 within 2 s")
	}
}

// signal sends sig to the process.
func (c *child) signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// kill sends SIGKILL and waits for the process to be reaped.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// wait waits for the child to exit, killing it after timeout; it returns an
// error if the child failed or did not report "done".
func (c *child) wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		c.kill()
		return fmt.Errorf("producer did not finish within %v (killed): %s", timeout, c.tail())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waitErr != nil || !c.rep.done {
		return fmt.Errorf("producer failed (%v): %s", c.waitErr, c.tail())
	}
	return nil
}

// tail is the end of the child's stderr, for error messages.
func (c *child) tail() string {
	s := c.stderr.String()
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return strings.TrimSpace(s)
}

// snapshot returns a copy of what the child reported so far.
func (c *child) snapshot() report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rep
	r.ends = maps.Clone(c.rep.ends)
	return r
}
