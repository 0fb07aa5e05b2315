package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cliEmitter is one side of cli-cost: a process reading lines on its
// stdin and delivering them to its own receiver.
type cliEmitter struct {
	side  string
	pid   int
	write func(line []byte) error // one write(2) of one line to its stdin
	close func() error            // end its input; it drains and exits
	rcv   *countingReceiver
}

// cliDrainBound bounds the wait for a receiver to get every line after the
// generator stopped, and for an emitter to exit after its input ended.
const cliDrainBound = 30 * time.Second

// runCLIPair runs both emitters side by side at rate: two generators with
// the same schedule and the same lines, one per pipe, then one CPU window
// read from both processes at the same moments, then the drain and the
// count of what each receiver got.
func runCLIPair(tmp, bin string, rate float64, plan cliCostPlan) ([]*CLICostRow, error) {
	dir, err := os.MkdirTemp(tmp, "cli")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ev, err := startCLIEvspool(bin, dir)
	if err != nil {
		return nil, err
	}
	sg, err := startCLISyslog(dir)
	if err != nil {
		_ = ev.close()
		return nil, err
	}
	nb, err := startCLIEvspoolNonblock(bin, dir)
	if err != nil {
		_, _ = ev.close(), sg.close()
		return nil, err
	}
	sides := []*cliEmitter{ev, sg, nb}
	defer func() {
		for _, s := range sides {
			s.rcv.close()
		}
	}()
	stop := make(chan struct{})
	sent := make([]int64, len(sides))
	genErr := make([]error, len(sides))
	t0 := time.Now().Add(50 * time.Millisecond)
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i], genErr[i] = generate(s.write, rate, t0, stop)
		}()
	}
	time.Sleep(time.Until(t0.Add(plan.Warmup)))
	rows, err := cliWindow(sides, rate, plan.Window)
	if err == nil && plan.PerfDir != "" {
		err = cliPerfRecord(sides, rate, plan)
	}
	close(stop)
	wg.Wait()
	// Each receiver must have every line before the emitter's input ends:
	// syslog-ng exits at EOF keeping what it has not sent.
	for i, s := range sides {
		s.rcv.waitFor(sent[i], cliDrainBound)
		if cerr := errors.Join(genErr[i], s.close()); cerr != nil && rows != nil {
			rows[i].Error = cerr.Error()
		}
	}
	if err != nil {
		return nil, err
	}
	for i, s := range sides {
		rows[i].Sent = sent[i]
		rows[i].Received, rows[i].Extra = s.rcv.counts()
	}
	return rows, nil
}

// cliWindow reads both processes' CPU and both receivers' counts at the
// start and the end of d.
func cliWindow(sides []*cliEmitter, rate float64, d time.Duration) ([]*CLICostRow, error) {
	a := make([]costSample, len(sides))
	for i, s := range sides {
		var err error
		if a[i], err = cliSample(s); err != nil {
			return nil, fmt.Errorf("%s: %w", s.side, err)
		}
	}
	time.Sleep(d)
	rows := make([]*CLICostRow, len(sides))
	for i, s := range sides {
		b, err := cliSample(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.side, err)
		}
		rows[i] = &CLICostRow{Side: s.side, Rate: rate, Window: between(a[i], b, nil)}
	}
	return rows, nil
}

// cliSample is one emitter process's CPU, its threads only (children are
// not counted), and its receiver's line count.
func cliSample(s *cliEmitter) (costSample, error) {
	cpu := cpuSample{at: time.Now(), tasks: map[string]int64{}}
	var err error
	cpu.runNs, cpu.ticks, err = processCPU(s.pid, cpu.tasks)
	return costSample{cpu: cpu, events: s.rcv.lines()}, err
}

// generate writes one line at a time, paced to rate from t0, until stop;
// it returns the lines written. The generator is the harness, whose CPU
// is not counted.
func generate(write func([]byte) error, rate float64, t0 time.Time, stop <-chan struct{}) (int64, error) {
	interval := time.Duration(float64(time.Second) / rate)
	var buf []byte
	for n := int64(0); ; n++ {
		if wait := time.Until(t0.Add(time.Duration(n) * interval)); wait > 0 {
			select {
			case <-stop:
				return n, nil
			case <-time.After(wait):
			}
		}
		select {
		case <-stop:
			return n, nil
		default:
		}
		buf = append(appendEvent(buf[:0], 0, uint64(n)), '\n')
		if err := write(buf); err != nil {
			return n, err
		}
	}
}

// startCLIEvspool starts `evspool run --fsync=false` on a spool of its own,
// its echo to /dev/null, as a unit file or a shell pipe runs it.
func startCLIEvspool(bin, dir string) (*cliEmitter, error) {
	sock := filepath.Join(dir, "evspool.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		rcv.close()
		return nil, err
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		rcv.close()
		return nil, err
	}
	defer devNull.Close()
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = devNull, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		rcv.close()
		return nil, err
	}
	return &cliEmitter{side: cliEvspool, pid: cmd.Process.Pid, rcv: rcv,
		write: func(line []byte) error { _, err := in.Write(line); return err },
		close: func() error { return closeAndWait(in, cmd, stderr) }}, nil
}

// closeAndWait ends cmd's stdin and waits for it to exit 0 (evspool run:
// everything delivered), killing it after cliDrainBound.
func closeAndWait(in io.Closer, cmd *exec.Cmd, stderr *lockedBuffer) error {
	_ = in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("evspool run: %w: %s", err, stderr.tail())
		}
		return nil
	case <-time.After(cliDrainBound):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("evspool run did not exit %v after its input ended (killed): %s", cliDrainBound, stderr.tail())
	}
}

// startCLISyslog starts syslog-ng as the syslog-ng-reliable contender
// does (its config, `syslog-ng -F`), fed by the generator.
func startCLISyslog(dir string) (*cliEmitter, error) {
	sdir := filepath.Join(dir, "syslog-ng")
	if err := os.Mkdir(sdir, 0o700); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "syslog-ng.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	s, err := openSyslogNG(sock, sdir)
	if err != nil {
		rcv.close()
		return nil, err
	}
	one := make([][]byte, 1)
	return &cliEmitter{side: cliSyslog, pid: s.Pid(), rcv: rcv,
		write: func(line []byte) error {
			one[0] = line[:len(line)-1] // Emit adds the newline
			return s.Emit(context.Background(), one)
		},
		close: s.Close}, nil
}

// slug is s with every run of characters other than letters and digits
// replaced by one '-', for a file name.
func slug(s string) string {
	return strings.Trim(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}), "-"), "-")
}

// cliPerfRecord records both emitters' call stacks with perf for
// plan.Window, side by side, into plan.PerfDir: cli-<side>-<rate>-<ns>.data,
// read with `go run . perf-attrib FILE` or `perf report -i FILE`.
func cliPerfRecord(sides []*cliEmitter, rate float64, plan cliCostPlan) error {
	if err := os.MkdirAll(plan.PerfDir, 0o755); err != nil {
		return err
	}
	var cmds []*exec.Cmd
	var out []*lockedBuffer
	for _, s := range sides {
		name := fmt.Sprintf("cli-%s-%.0f-%d.data", slug(s.side), rate, time.Now().UnixNano())
		cmd := exec.Command("perf", "record", "-g", "-F", "997", "-p", strconv.Itoa(s.pid),
			"-o", filepath.Join(plan.PerfDir, name), "--", "sleep", strconv.FormatFloat(plan.Window.Seconds(), 'f', 3, 64))
		b := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = b, b
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("perf record: %w", err)
		}
		cmds, out = append(cmds, cmd), append(out, b)
	}
	var errs []error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("perf record %s: %w: %s", sides[i].side, err, out[i].tail()))
		}
	}
	return errors.Join(errs...)
}

// startCLIEvspoolNonblock starts `evspool run --fsync=false` as
// startCLIEvspool does, but with its stdin's pipe O_NONBLOCK when it
// starts, so that its Go runtime reads stdin through the network poller
// rather than in a blocking read(2): the diagnostic side of cli-cost, which
// shows what the blocking read costs (a shell's pipe is blocking). It is
// started with syscall.ForkExec, as os/exec would make the pipe blocking.
func startCLIEvspoolNonblock(bin, dir string) (*cliEmitter, error) {
	sock := filepath.Join(dir, "evspool-nb.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	spool := filepath.Join(dir, "spool-nb")
	if err := os.Mkdir(spool, 0o700); err != nil {
		rcv.close()
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(dir, "evspool-nb.stderr"))
	if err != nil {
		rcv.close()
		return nil, err
	}
	defer stderr.Close()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		rcv.close()
		return nil, err
	}
	devNull, err := syscall.Open(os.DevNull, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err == nil {
		err = syscall.SetNonblock(p[0], true)
	}
	var pid int
	if err == nil {
		argv := []string{bin, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--log-level", "warn"}
		pid, err = syscall.ForkExec(bin, argv, &syscall.ProcAttr{Env: os.Environ(),
			Files: []uintptr{uintptr(p[0]), uintptr(devNull), stderr.Fd()},
			Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	}
	_ = syscall.Close(p[0])
	_ = syscall.Close(devNull)
	if err != nil {
		_ = syscall.Close(p[1])
		rcv.close()
		return nil, err
	}
	in := os.NewFile(uintptr(p[1]), "evspool-nb-stdin")
	proc, err := os.FindProcess(pid)
	if err != nil {
		_ = in.Close()
		rcv.close()
		return nil, err
	}
	return &cliEmitter{side: cliEvspoolNB, pid: pid, rcv: rcv,
		write: func(line []byte) error { _, err := in.Write(line); return err },
		close: func() error { return closeAndWaitProc(in, proc, stderr.Name()) }}, nil
}

// closeAndWaitProc is closeAndWait for a process started without os/exec.
func closeAndWaitProc(in io.Closer, proc *os.Process, stderrPath string) error {
	_ = in.Close()
	done := make(chan error, 1)
	go func() {
		st, err := proc.Wait()
		if err == nil && !st.Success() {
			err = errors.New(st.String())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("evspool run: %w: %s", err, tailFile(stderrPath))
		}
		return nil
	case <-time.After(cliDrainBound):
		_ = proc.Kill()
		<-done
		return fmt.Errorf("evspool run did not exit %v after its input ended (killed): %s", cliDrainBound, tailFile(stderrPath))
	}
}
