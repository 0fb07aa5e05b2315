package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"
)

// cliCost is the scenario that measures the two emitters as an SRE runs
// them: `evspool run --fsync=false` and `syslog-ng -F` (the config of
// syslog-ng-reliable), each reading a pipe a generator writes, each
// process's own CPU a line. node-cost, beside it, counts the producer too.
const cliCost = "cli-cost"

// The two sides of cli-cost.
const (
	cliEvspool = "evspool run --fsync=false"
	cliSyslog  = "syslog-ng"
	// cliEvspoolNB is evspool run given a stdin pipe already O_NONBLOCK: a
	// control, as evspool run sets the flag on a blocking pipe itself and
	// should cost what this side does.
	cliEvspoolNB = "evspool run --fsync=false, stdin O_NONBLOCK"
	// cliEvspoolP2 is evspool run with GOMAXPROCS=2 in its environment: a
	// control, as evspool run runs on one P unless told otherwise; what
	// that saves.
	cliEvspoolP2 = "evspool run --fsync=false, GOMAXPROCS=2"
	// cliExec is `evspool exec --fsync=false -- cat`: the packaged unit's
	// way, the lines read from COMMAND's stdout (cat passes the generator's
	// pipe on); cat's CPU is its own, not counted.
	cliExec = "evspool exec --fsync=false"
	// cliExecP2 is cliExec with GOMAXPROCS=2 in its environment: a control
	// for exec's one P.
	cliExecP2 = "evspool exec --fsync=false, GOMAXPROCS=2"
)

// cliPairs are the ratios cli-cost gives: evspool run / syslog-ng as an
// SRE runs them, and the controls: a pipe already non-blocking, two Ps.
var cliPairs = [][2]string{{cliEvspool, cliSyslog}, {cliEvspoolNB, cliSyslog}, {cliEvspoolNB, cliEvspool},
	{cliEvspoolP2, cliSyslog}, {cliEvspoolP2, cliEvspool},
	{cliExec, cliSyslog}, {cliExecP2, cliExec}}

// cliCostPlan is how long cli-cost looks at each rate: the emitters start,
// the generator runs Warmup, then the CPU window, Window.
type cliCostPlan struct {
	Rates  []float64     `json:"rates"`
	Rounds int           `json:"rounds"`
	Warmup time.Duration `json:"warmup_ns"`
	Window time.Duration `json:"window_ns"`
	// PerfDir, if set, gets a `perf record -g` of each emitter over a
	// window as long as Window, taken after it (the CPU figure is read
	// with nothing attached).
	PerfDir string `json:"perf_dir,omitempty"`
}

func newCLICostPlan(quick bool, rounds int) cliCostPlan {
	p := cliCostPlan{Rates: []float64{100, 1000}, Rounds: 3, Warmup: 2 * time.Second, Window: 10 * time.Second}
	if quick {
		p.Rounds, p.Warmup, p.Window = 1, time.Second, 3*time.Second
	}
	if rounds > 0 {
		p.Rounds = rounds
	}
	return p
}

// CLICost is cli-cost's result.
type CLICost struct {
	Plan          cliCostPlan   `json:"plan"`
	LoadAvgBefore string        `json:"loadavg_before"`
	LoadAvgAfter  string        `json:"loadavg_after"`
	WallSeconds   float64       `json:"wall_seconds"`
	Rows          []*CLICostRow `json:"rows"`
	Ratios        []CostRatio   `json:"ratios"` // evspool run / syslog-ng, CPU a line, per rate
}

// CLICostRow is one side at one rate in one round. The window's CPU is the
// emitter process's alone (its threads, no children, the generator and the
// receiver not counted); Lines are what its receiver got in the window.
// Sent and Received cover the whole run, checked when its input ended.
type CLICostRow struct {
	Side     string     `json:"side"`
	Rate     float64    `json:"rate"`
	Round    int        `json:"round"`
	Window   costWindow `json:"window"`
	Sent     int64      `json:"sent"`
	Received int64      `json:"received"` // distinct lines, every one checked byte for byte
	Extra    int64      `json:"extra"`    // duplicates and foreign lines
	Error    string     `json:"error,omitempty"`
}

// complete reports whether the receiver got every line sent, once each.
func (r *CLICostRow) complete() bool { return r.Error == "" && r.Received == r.Sent && r.Extra == 0 }

// runCLICost builds cmd/evspool from root and runs cli-cost: round by
// round, each rate in turn, both emitters side by side.
func runCLICost(tmp, root string, plan cliCostPlan, prog *progress, res *Results) *CLICost {
	cc := &CLICost{Plan: plan, LoadAvgBefore: loadAvg()}
	start := time.Now()
	bin := filepath.Join(tmp, "evspool-cli")
	build := exec.Command("go", "build", "-o", bin, "./cmd/evspool")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		res.Errors = append(res.Errors, fmt.Sprintf("%s: build evspool: %v: %s", cliCost, err, out))
		return cc
	}
	if err := syslogNGAvailable(); err != nil {
		res.Errors = append(res.Errors, cliCost+": "+err.Error())
		return cc
	}
	for round := range plan.Rounds {
		for _, rate := range plan.Rates {
			prog.begin(fmt.Sprintf("%s %.0f/s round %d/%d", cliCost, rate, round+1, plan.Rounds))
			rows, err := runCLIPair(tmp, bin, rate, plan)
			runtime.GC()
			debug.FreeOSMemory()
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s %.0f/s round %d: %v", cliCost, rate, round+1, err))
				prog.end("error: " + err.Error())
				continue
			}
			summary := ""
			for _, r := range rows {
				r.Round = round
				cc.Rows = append(cc.Rows, r)
				if !r.complete() {
					res.Errors = append(res.Errors, fmt.Sprintf("%s %s %.0f/s round %d: %s", cliCost, r.Side, rate, round+1, r.shortfall()))
				}
				summary += fmt.Sprintf("%s %s µs a line; ", r.Side, ms(r.Window.cpuMsPer1k()))
			}
			prog.end(summary)
		}
	}
	cc.Ratios = cliRatios(cc.Rows, plan.Rates)
	cc.LoadAvgAfter, cc.WallSeconds = loadAvg(), time.Since(start).Seconds()
	return cc
}

// shortfall says what a row's receiver missed.
func (r *CLICostRow) shortfall() string {
	if r.Error != "" {
		return r.Error
	}
	return fmt.Sprintf("receiver got %d of %d lines sent, %d extra", r.Received, r.Sent, r.Extra)
}

// cliRatios is, for each of cliPairs and each rate, the first side's CPU a
// line over the second's, for the rounds where both delivered every line.
func cliRatios(rows []*CLICostRow, rates []float64) []CostRatio {
	var out []CostRatio
	for _, pair := range cliPairs {
		out = append(out, cliPairRatios(rows, rates, pair)...)
	}
	return out
}

func cliPairRatios(rows []*CLICostRow, rates []float64, pair [2]string) []CostRatio {
	var out []CostRatio
	for _, rate := range rates {
		cr := CostRatio{Of: pair[0], To: pair[1], Rate: rate}
		of, to := map[int]*CLICostRow{}, map[int]*CLICostRow{}
		var rounds []int
		for _, r := range rows {
			switch {
			case r.Rate != rate || !r.complete():
			case r.Side == pair[0]:
				of[r.Round] = r
				rounds = append(rounds, r.Round)
			case r.Side == pair[1]:
				to[r.Round] = r
			}
		}
		for _, k := range rounds {
			if d, ok := to[k]; ok && d.Window.cpuMsPer1k() > 0 {
				cr.Rounds = append(cr.Rounds, of[k].Window.cpuMsPer1k()/d.Window.cpuMsPer1k())
			}
		}
		if len(cr.Rounds) > 0 {
			cr.Median = median(cr.Rounds)
			out = append(out, cr)
		}
	}
	return out
}
