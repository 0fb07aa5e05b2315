package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// interval is a span of wall-clock time, unix ns.
type interval struct {
	From int64 `json:"from_ns"`
	To   int64 `json:"to_ns"`
}

// rig is one run in progress: the receiver, the producer processes and
// what the harness observed.
type rig struct {
	sc         *scenario
	contender  string
	profileDir string // where producers write CPU profiles; "" for none
	dir        string
	sock       string
	spool      string
	col        *collector
	rcv        *refrecv.Receiver
	samp       *sampler

	t0       int64          // when producing started (backlog: when the receiver appeared)
	sent     map[int][]span // per producer, per producer process
	outages  []interval     // outage, and when delivery may resume
	last     *child
	pending  int
	dropped  uint64
	emitErrs uint64
	compacts uint64
	calls    [3]int64 // worst Emit call p50, p99, max over the producer processes (ns)
	fillRSS  int64    // backlog: peak RssAnon of the process that filled the spool
	failures []string // what went wrong with the contender itself (a restart that failed)
	cost     *CostRow // node-cost's windows
}

// runOne runs one contender through one round of a scenario.
func runOne(tmp, profileDir string, sc *scenario, contender string) (*runResult, error) {
	dir, err := os.MkdirTemp(tmp, "run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &rig{sc: sc, contender: contender, profileDir: profileDir, dir: dir, sock: filepath.Join(dir, "r.sock"),
		spool: filepath.Join(dir, "spool"), col: &collector{}, sent: map[int][]span{}}
	if sc.RecvRate > 0 {
		r.col.interval = time.Duration(float64(time.Second) / sc.RecvRate)
	}
	if err := os.MkdirAll(r.spool, 0o700); err != nil {
		return nil, err
	}
	r.samp = startSampler(r.spool)
	defer func() {
		if r.rcv != nil {
			_ = r.rcv.Kill()
		}
	}()
	switch {
	case sc.Name == nodeCost:
		err = r.runCost()
	case sc.Backlog > 0:
		err = r.runBacklog()
	case sc.Fault == faultSigkill:
		err = r.runSigkill()
	default:
		err = r.runReceiverFaults()
	}
	if r.rcv != nil {
		_ = r.rcv.Close() // reads what is still buffered
	}
	rss, disk, cpuNs, descNs := r.samp.close()
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", sc.Name, contender, err)
	}
	res := r.result(rss, disk)
	res.CPUNs, res.DescCPUNs = cpuNs, descNs
	return res, nil
}

func (r *rig) startReceiver() error {
	rcv, err := refrecv.Start("unix", r.sock, &refrecv.Options{CountOnly: true, Out: r.col, HandleTime: r.sc.RecvHandle})
	r.rcv = rcv
	return err
}

// spawn starts producer process gen, producing for d.
func (r *rig) spawn(gen int, d time.Duration, extra ...string) (*child, error) {
	sc := r.sc
	args := []string{"-contender", r.contender, "-addr", r.sock, "-dir", r.spool, "-mode", sc.Mode,
		"-duration", d.String(), "-drain-timeout", sc.drainTimeout().String(),
		"-batch", strconv.Itoa(sc.Batch), "-producers", strconv.Itoa(max(1, sc.Producers)),
		"-count", strconv.Itoa(sc.Count), "-rate", strconv.FormatFloat(sc.Rate, 'f', -1, 64),
		"-max-rate", strconv.FormatFloat(sc.MaxRate, 'f', -1, 64),
		"-start-seq", strconv.FormatUint(uint64(gen)*genStride, 10)}
	if r.profileDir != "" {
		name := fmt.Sprintf("%s-%s-%d-%d.pprof", sc.Name, r.contender, gen, time.Now().UnixNano())
		args = append(args, "-cpuprofile", filepath.Join(r.profileDir, name))
	}
	c, err := startChild(append(args, extra...))
	if err != nil {
		return nil, err
	}
	r.samp.watch(c.pid())
	select {
	case <-c.ready:
	case <-time.After(30 * time.Second):
		c.kill()
		return nil, fmt.Errorf("producer not ready after 30 s")
	}
	r.last = c
	return c, nil
}

// collect records what producer process gen handed over.
func (r *rig) collect(c *child, gen int) {
	rep := c.snapshot()
	for p, end := range rep.ends {
		r.sent[p] = append(r.sent[p], span{base: uint64(gen) * genStride, end: end})
	}
	r.pending, r.dropped, r.emitErrs = rep.pending, r.dropped+rep.dropped, r.emitErrs+rep.errs
	r.compacts += rep.compacts
	for i, v := range rep.calls {
		r.calls[i] = max(r.calls[i], v)
	}
}

// finish waits for the last producer to deliver and exit.
func (r *rig) finish(c *child, gen int, produceFor time.Duration) error {
	err := c.wait(produceFor + r.sc.drainTimeout() + 20*time.Second)
	r.collect(c, gen)
	return err
}

// sleepUntilNs sleeps until the unix time ns.
func sleepUntilNs(ns int64) {
	if d := time.Until(time.Unix(0, ns)); d > 0 {
		time.Sleep(d)
	}
}
