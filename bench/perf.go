package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// syscallEvent is the tracepoint perf counts: every system call entered.
const syscallEvent = "raw_syscalls:sys_enter"

// mallocEvent is libc's malloc entered, counted when a uprobe of that name
// exists (`make bench-malloc-probe` adds it: `perf probe -x <libc> malloc`).
// Only C contenders (syslog-ng) call it; Go's allocations are counted by
// the producer itself (the "mem" report line).
const mallocEvent = "probe_libc:malloc"

// mallocProbed reports whether the malloc uprobe exists.
func mallocProbed() bool {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(dir, "events", "probe_libc", "malloc")); err == nil {
			return true
		}
	}
	return false
}

// perfCounter counts a process's system calls over a window with
// `perf stat`. perf starts with its counters disabled and is switched on
// and off through its control FIFO, each command acknowledged, so that the
// window is known to the harness and perf's start-up falls outside it.
type perfCounter struct {
	cmd      *exec.Cmd
	out      string
	ctl, ack *os.File
	mallocs  bool // mallocEvent is counted too
	stderr   bytes.Buffer
	exited   chan struct{}
}

// perfTimeout bounds perf's start and each acknowledgement.
const perfTimeout = 5 * time.Second

// startPerf attaches perf to pid and its descendants (treePids, as they are
// when it starts) and returns once it counts; dir holds its FIFOs and
// output.
func startPerf(pid int, dir string) (*perfCounter, error) {
	bin, err := exec.LookPath("perf")
	if err != nil {
		return nil, errors.New("perf not found in PATH")
	}
	dir, err = os.MkdirTemp(dir, "perf")
	if err != nil {
		return nil, err
	}
	p := &perfCounter{out: filepath.Join(dir, "stat.csv"), exited: make(chan struct{}), mallocs: mallocProbed()}
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return nil, err
		}
	}
	// Read and write on both ends, so that neither open waits for perf.
	if p.ctl, err = os.OpenFile(ctl, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if p.ack, err = os.OpenFile(ack, os.O_RDWR, 0); err != nil {
		p.ctl.Close()
		return nil, err
	}
	events := syscallEvent
	if p.mallocs {
		events += "," + mallocEvent
	}
	p.cmd = exec.Command(bin, "stat", "-x,", "-o", p.out, "--delay", "-1",
		"--control", "fifo:"+ctl+","+ack, "-e", events, "-p", joinPids(treePids(pid)))
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		p.closeFIFOs()
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := p.command("enable"); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

func joinPids(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// command sends a control command and waits for perf's acknowledgement.
func (p *perfCounter) command(c string) error {
	if _, err := p.ctl.WriteString(c + "\n"); err != nil {
		return err
	}
	_ = p.ack.SetReadDeadline(time.Now().Add(perfTimeout))
	buf := make([]byte, 16)
	n, err := p.ack.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "ack") {
		select {
		case <-p.exited:
			return fmt.Errorf("perf exited: %s", p.tail())
		default:
		}
		return fmt.Errorf("perf did not acknowledge %q (%v): %s", c, err, p.tail())
	}
	return nil
}

// stop ends the window and returns the system calls counted in it, and the
// malloc calls when the probe exists (nil otherwise).
func (p *perfCounter) stop() (int64, *int64, error) {
	if err := p.command("disable"); err != nil {
		p.kill()
		return 0, nil, err
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(perfTimeout):
		p.kill()
		return 0, nil, fmt.Errorf("perf did not exit on SIGINT: %s", p.tail())
	}
	p.closeFIFOs()
	out, err := os.ReadFile(p.out)
	if err != nil {
		return 0, nil, err
	}
	n, err := parsePerfCount(string(out), syscallEvent)
	if err != nil || !p.mallocs {
		return n, nil, err
	}
	m, err := parsePerfCount(string(out), mallocEvent)
	if err != nil {
		return n, nil, err
	}
	return n, &m, nil
}

func (p *perfCounter) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.closeFIFOs()
}

func (p *perfCounter) closeFIFOs() {
	p.ctl.Close()
	p.ack.Close()
}

func (p *perfCounter) tail() string {
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > 300 {
		s = s[len(s)-300:]
	}
	return s
}

// parsePerfCount reads event's count from `perf stat -x,` output: lines
// "<count>,<unit>,<event>,<run ns>,<percent>,...", among comments and
// "Events enabled" notes. "<not counted>" means the process never ran
// while counting, which is zero system calls; "<not supported>" and a
// missing line are errors.
func parsePerfCount(out, event string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 3 || f[2] != event {
			continue
		}
		switch f[0] {
		case "<not counted>":
			return 0, nil
		case "<not supported>":
			return 0, fmt.Errorf("perf: %s not supported", event)
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("perf: count %q of %s", f[0], event)
		}
		return int64(n), nil
	}
	return 0, fmt.Errorf("perf: no count of %s in %q", event, strings.TrimSpace(out))
}
