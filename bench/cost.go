package main

import (
	"fmt"
	"syscall"
	"time"
)

// nodeCost is the name of the scenario that measures what a contender costs
// a node: CPU and system calls per event at a daemon's rates, and system
// calls when nothing happens.
const nodeCost = "node-cost"

// costScenario is node-cost: each contender at each rate in a producer
// process of its own, one event per Emit. After Warmup the paced
// window, Duration, is measured in two halves: the first with nothing
// attached (the CPU figure), the second with perf counting system calls
// (the syscall figure, and the CPU with perf attached, which shows perf's
// overhead). Then the producer drains and stays connected, sending nothing,
// for the idle window, Idle, counted by perf too.
func costScenario(quick bool) scenario {
	sc := scenario{
		Name:        nodeCost,
		Description: "CPU and system calls per event at 100 and 1,000 events/s (one per Emit), and system calls per second idle, receiver connected",
		Mode:        "paced",
		Batch:       1,
		Fault:       faultNone,
		Rounds:      1,
		Rates:       []float64{100, 1000},
		Warmup:      time.Second,
		Duration:    10 * time.Second,
		Idle:        10 * time.Second,
		Contenders:  []string{cEvspoolFsync, cEvspoolNoFsync, cLeastDurable, cWriteThrough, cSyslogNG},
	}
	if quick {
		// Ten runs in about a minute: the figures rest on 1.8 s halves and
		// 1.5 s idle windows.
		sc.Warmup, sc.Duration, sc.Idle = 300*time.Millisecond, 3600*time.Millisecond, 1500*time.Millisecond
	}
	return sc
}

// costBound bounds a node-cost producer's phases; the harness ends each one
// with SIGUSR1 long before.
const costBound = 5 * time.Minute

// costSample is the producer's CPU and the receiver's count at one moment.
type costSample struct {
	cpu    cpuSample
	events int64
}

func (r *rig) costSample(pid int) (costSample, error) {
	cpu, err := readCPU(pid)
	return costSample{cpu: cpu, events: int64(r.col.count())}, err
}

// runCost runs one contender at the scenario's Rate (see costScenario).
func (r *rig) runCost() error {
	if err := r.startReceiver(); err != nil {
		return err
	}
	c, err := r.spawn(0, costBound, "-signalled", "-report-every", costBound.String())
	if err != nil {
		return err
	}
	r.t0 = c.snapshot().readyNs
	r.cost = &CostRow{Contender: r.contender, Rate: r.sc.Rate}
	if err := r.measureCost(c, r.cost); err != nil {
		c.kill()
		return err
	}
	if err := c.signal(syscall.SIGUSR1); err != nil {
		return err
	}
	return r.finish(c, 0, 0)
}

// measureCost takes the windows of one run into row and leaves the
// producer idle, waiting for its last SIGUSR1.
func (r *rig) measureCost(c *child, row *CostRow) error {
	pid, half := c.pid(), r.sc.Duration/2
	sleepUntilNs(r.t0 + int64(r.sc.Warmup))
	a, err := r.costSample(pid)
	if err != nil {
		return err
	}
	time.Sleep(half)
	b, err := r.costSample(pid)
	if err != nil {
		return err
	}
	row.Paced = between(a, b, nil)
	if row.Perf, err = r.perfWindow(c, half, true); err != nil {
		row.PerfError = err.Error()
	}
	if err := c.signal(syscall.SIGUSR1); err != nil {
		return err
	}
	select {
	case <-c.idle:
	case <-c.exited:
		return fmt.Errorf("producer exited before idling: %s", c.tail())
	case <-time.After(r.sc.drainTimeout()):
		return fmt.Errorf("producer not idle %v after producing", r.sc.drainTimeout())
	}
	if row.PerfError == "" {
		w, err := r.perfWindow(c, r.sc.Idle, false)
		if err == nil {
			row.Idle = *w
			return nil
		}
		row.PerfError = "idle: " + err.Error()
	}
	i0, err := r.costSample(pid)
	if err != nil {
		return err
	}
	time.Sleep(r.sc.Idle)
	i1, err := r.costSample(pid)
	row.Idle = between(i0, i1, nil)
	return err
}

// perfWindow measures d with perf counting the producer's (and its
// descendants') system calls, and with allocs the Go heap objects the
// producer allocated in it (its "mem" lines, asked for with SIGUSR2 at
// each end of the window).
func (r *rig) perfWindow(c *child, d time.Duration, allocs bool) (*costWindow, error) {
	pid := c.pid()
	p, err := startPerf(pid, r.dir)
	if err != nil {
		return nil, err
	}
	var m0 int64
	if allocs {
		if m0, err = c.askMem(); err != nil {
			p.kill()
			return nil, err
		}
	}
	a, err := r.costSample(pid)
	if err != nil {
		p.kill()
		return nil, err
	}
	time.Sleep(d)
	b, err := r.costSample(pid)
	if err != nil {
		p.kill()
		return nil, err
	}
	var m1 int64
	if allocs {
		if m1, err = c.askMem(); err != nil {
			p.kill()
			return nil, err
		}
	}
	n, mallocs, err := p.stop()
	if err != nil {
		return nil, err
	}
	w := between(a, b, &n)
	w.Mallocs = mallocs
	if allocs {
		objs := m1 - m0
		w.GoAllocs = &objs
	}
	return &w, nil
}
