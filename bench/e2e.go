package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// E2E compares `evspool run`, stdin to a fast receiver with fsync on, with
// raw bbolt group commit (one Update per 1000 Puts, fsync on) on the same
// disk, the same events, round by round in alternation.
type E2E struct {
	Events            int       `json:"events"`
	EvspoolRunPerSec  float64   `json:"evspool_run_events_per_sec"`
	RawBoltPerSec     float64   `json:"raw_bolt_events_per_sec"`
	Ratio             float64   `json:"ratio"`               // pooled: all events over all time, each side
	RoundRatios       []float64 `json:"round_ratios"`        // each round's pair
	MedianRatio       float64   `json:"median_ratio"`        // the figure the target is judged on
	EvspoolRunSeconds []float64 `json:"evspool_run_seconds"` // start to the last event received
	// EvspoolExitSeconds is start to exit: the last events wait in the
	// replay window until the receiver has read 64 KiB more or stayed
	// connected --replay-linger (2 s) after them; at the end of the input
	// nothing more comes, so the exit waits for the linger.
	EvspoolExitSeconds []float64 `json:"evspool_run_exit_seconds"`
	RawBoltSeconds     []float64 `json:"raw_bolt_seconds"`
	// EvspoolRunP2Seconds is the control side: the same evspool run with
	// GOMAXPROCS=2 in its environment (it runs on one P unless told).
	// P2Ratios are its rounds' time over the plain side's: above 1, one P
	// is faster.
	EvspoolRunP2Seconds []float64 `json:"evspool_run_gomaxprocs2_seconds,omitempty"`
	P2Ratios            []float64 `json:"gomaxprocs2_round_ratios,omitempty"`
	EvspoolRunRSSAnon   int64     `json:"evspool_run_peak_rss_anon_bytes"`
	Error               string    `json:"error,omitempty"`
}

// runE2E builds cmd/evspool from the repository at root and runs both
// contenders rounds times each over events lines.
func runE2E(tmp, root string, events, rounds int, prog *progress) *E2E {
	e := &E2E{Events: events}
	bin := filepath.Join(tmp, "evspool")
	build := exec.Command("go", "build", "-o", bin, "./cmd/evspool")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		e.Error = fmt.Sprintf("build evspool: %v: %s", err, bytes.TrimSpace(out))
		return e
	}
	input := filepath.Join(tmp, "input.txt")
	if err := writeInput(input, events); err != nil {
		e.Error = err.Error()
		return e
	}
	for i := range rounds {
		for _, which := range rotate([]string{"evspool run", "raw bbolt", e2eP2}, i) {
			prog.begin(fmt.Sprintf("e2e %s round %d/%d", which, i+1, rounds))
			d, err := e.runSide(which, tmp, bin, input)
			if err != nil {
				e.Error = fmt.Sprintf("%s: %v", which, err)
				prog.end("error: " + e.Error)
				return e
			}
			prog.end(fmt.Sprintf("%s events/s", humanRate(float64(events)/d.Seconds())))
		}
	}
	e.finish(rounds)
	return e
}

// e2eP2 is the comparison's control side.
const e2eP2 = "evspool run, GOMAXPROCS=2"

// runSide runs one contender of the comparison once and records its time.
func (e *E2E) runSide(which, tmp, bin, input string) (time.Duration, error) {
	if which == "raw bbolt" {
		d, err := timeRawBolt(tmp, input)
		e.RawBoltSeconds = append(e.RawBoltSeconds, d.Seconds())
		return d, err
	}
	if which == e2eP2 {
		d, _, _, err := timeEvspoolRun(tmp, bin, input, e.Events, "GOMAXPROCS=2")
		e.EvspoolRunP2Seconds = append(e.EvspoolRunP2Seconds, d.Seconds())
		return d, err
	}
	d, exit, rss, err := timeEvspoolRun(tmp, bin, input, e.Events)
	e.EvspoolRunSeconds = append(e.EvspoolRunSeconds, d.Seconds())
	e.EvspoolExitSeconds = append(e.EvspoolExitSeconds, exit.Seconds())
	e.EvspoolRunRSSAnon = max(e.EvspoolRunRSSAnon, rss)
	return d, err
}

// finish computes the rates and ratios from the rounds' times.
func (e *E2E) finish(rounds int) {
	var runSec, boltSec float64
	for i := range e.RawBoltSeconds {
		runSec, boltSec = runSec+e.EvspoolRunSeconds[i], boltSec+e.RawBoltSeconds[i]
		e.RoundRatios = append(e.RoundRatios, e.RawBoltSeconds[i]/e.EvspoolRunSeconds[i])
	}
	for i := range min(len(e.EvspoolRunP2Seconds), len(e.EvspoolRunSeconds)) {
		e.P2Ratios = append(e.P2Ratios, e.EvspoolRunP2Seconds[i]/e.EvspoolRunSeconds[i])
	}
	e.EvspoolRunPerSec = float64(e.Events*rounds) / runSec
	e.RawBoltPerSec = float64(e.Events*rounds) / boltSec
	e.Ratio = e.EvspoolRunPerSec / e.RawBoltPerSec
	e.MedianRatio = median(e.RoundRatios)
}

func writeInput(path string, n int) error {
	buf := make([]byte, 0, n*(eventSize+1))
	for i := range n {
		buf = append(appendEvent(buf, 0, uint64(i)), '\n')
	}
	return os.WriteFile(path, buf, 0o600)
}

// timeEvspoolRun runs `evspool run` over input to a fresh receiver and
// returns the time from start until the receiver has every event, and until
// evspool exited 0.
func timeEvspoolRun(tmp, bin, input string, events int, env ...string) (received, exited time.Duration, rss int64, err error) {
	dir, err := os.MkdirTemp(tmp, "e2e")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "r.sock")
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{CountOnly: true})
	if err != nil {
		return 0, 0, 0, err
	}
	defer rcv.Kill()
	cmd := exec.Command(bin, "run", "--socket", sock, "--spool", filepath.Join(dir, "spool"), "--drain-timeout", "60s")
	cmd.Env = append(os.Environ(), env...)
	samp := startSampler(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	got := make(chan time.Time, 1)
	go func() {
		if rcv.WaitCount(ctx, events) == nil {
			got <- time.Now()
		}
		close(got)
	}()
	start := time.Now()
	exited, err = timeCommand(cmd, input, samp)
	rss, _, _, _ = samp.close()
	if err != nil {
		return 0, 0, 0, err
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	select {
	case at, ok := <-got:
		if !ok {
			return 0, 0, 0, fmt.Errorf("the receiver did not get all %d events", events)
		}
		return at.Sub(start), exited, rss, nil
	case <-wctx.Done():
		return 0, 0, 0, fmt.Errorf("the receiver did not get all %d events within 5 s of evspool's exit", events)
	}
}

// timeRawBolt runs this binary's rawbolt mode over input.
func timeRawBolt(tmp, input string) (time.Duration, error) {
	dir, err := os.MkdirTemp(tmp, "raw")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "rawbolt", filepath.Join(dir, "raw.db"))
	// evspool sets GOGC=400 for itself (cmd/evspool/gc.go): give the
	// ceiling the same collector, or the comparison measures GC settings.
	cmd.Env = append(os.Environ(), "GOGC=400")
	return timeCommand(cmd, input, nil)
}

// timeCommand runs cmd with input on stdin and stdout to /dev/null, and
// returns how long it took; a non-zero exit is an error.
func timeCommand(cmd *exec.Cmd, input string, samp *sampler) (time.Duration, error) {
	in, err := os.Open(input)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, nil, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if samp != nil {
		samp.watch(cmd.Process.Pid)
	}
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return time.Since(start), nil
}
