package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	sides, err := startCLISides(bin, dir)
	if err != nil {
		return nil, err
	}
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

// startCLISides starts the emitters, or none.
func startCLISides(bin, dir string) ([]*cliEmitter, error) {
	var sides []*cliEmitter
	for _, start := range []func() (*cliEmitter, error){
		func() (*cliEmitter, error) { return startCLIEvspool(bin, dir, cliEvspool) },
		func() (*cliEmitter, error) { return startCLIEvspool(bin, dir, cliEvspoolP2, "GOMAXPROCS=2") },
		func() (*cliEmitter, error) { return startCLISyslog(dir) },
		func() (*cliEmitter, error) { return startCLIEvspoolNonblock(bin, dir) },
		func() (*cliEmitter, error) { return startCLIEvspool(bin, dir, cliExec) },
		func() (*cliEmitter, error) { return startCLIEvspool(bin, dir, cliExecP2, "GOMAXPROCS=2") },
	} {
		s, err := start()
		if err != nil {
			for _, s := range sides {
				_ = s.close()
				s.rcv.close()
			}
			return nil, err
		}
		sides = append(sides, s)
	}
	return sides, nil
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
