package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// NodeCost is the node-cost scenario's result (see costScenario).
type NodeCost struct {
	LoadAvgBefore string      `json:"loadavg_before"`
	LoadAvgAfter  string      `json:"loadavg_after"`
	WallSeconds   float64     `json:"wall_seconds"`
	Rows          []*CostRow  `json:"rows"`
	Ratios        []CostRatio `json:"ratios"`
	// PerfError says once why the syscall figures are missing, if they are.
	PerfError string `json:"perf_error,omitempty"`
}

// CostRow is one contender at one rate in one round.
type CostRow struct {
	Contender string      `json:"contender"`
	Rate      float64     `json:"rate"`
	Round     int         `json:"round"`
	Paced     costWindow  `json:"paced"`      // first half of the paced window, nothing attached
	Perf      *costWindow `json:"paced_perf"` // second half, perf attached; nil without perf
	Idle      costWindow  `json:"idle"`       // drained, connected, no events
	PerfError string      `json:"perf_error,omitempty"`
	Sent      int64       `json:"sent"`
	Lost      int64       `json:"lost"`
}

// costWindow is what one window measured: the producer's CPU (run time, ns,
// and /proc/<pid>/stat ticks), the events the receiver got, and the system
// calls perf counted (nil when perf was not attached).
type costWindow struct {
	Seconds  float64 `json:"seconds"`
	Events   int64   `json:"events"`
	CPUNs    int64   `json:"cpu_ns"`
	CPUTicks int64   `json:"cpu_ticks"`
	Syscalls *int64  `json:"syscalls,omitempty"`
	// GoAllocs are the heap objects the producer's Go code allocated
	// (runtime/metrics /gc/heap/allocs:objects); Mallocs the libc malloc
	// calls of the producer and its descendants (perf's mallocEvent, when
	// the probe exists): syslog-ng's allocations. nil when not counted.
	GoAllocs *int64 `json:"go_allocs,omitempty"`
	Mallocs  *int64 `json:"mallocs,omitempty"`
}

// perEvent is n per event of the window, false without n or events.
func (w *costWindow) perEvent(n *int64) (float64, bool) {
	if w == nil || n == nil || w.Events <= 0 {
		return 0, false
	}
	return float64(*n) / float64(w.Events), true
}

func between(a, b costSample, syscalls *int64) costWindow {
	return costWindow{Seconds: b.cpu.at.Sub(a.cpu.at).Seconds(), Events: b.events - a.events,
		CPUNs: runBetween(a.cpu, b.cpu), CPUTicks: b.cpu.ticks - a.cpu.ticks, Syscalls: syscalls}
}

// cpuMsPer1k is the CPU time per 1,000 events, ms; 0 without events.
func (w *costWindow) cpuMsPer1k() float64 {
	if w == nil || w.Events <= 0 {
		return 0
	}
	return float64(w.CPUNs) / 1e3 / float64(w.Events)
}

// eventsPerSec is the rate the receiver saw in the window.
func (w *costWindow) eventsPerSec() float64 {
	if w == nil || w.Seconds <= 0 {
		return 0
	}
	return float64(w.Events) / w.Seconds
}

// cpuMsPerSec is the CPU time per second of the window, ms.
func (w *costWindow) cpuMsPerSec() float64 {
	if w == nil || w.Seconds <= 0 {
		return 0
	}
	return float64(w.CPUNs) / 1e6 / w.Seconds
}

// syscallsPerEvent is false without a count or without events.
func (w *costWindow) syscallsPerEvent() (float64, bool) {
	if w == nil || w.Syscalls == nil || w.Events <= 0 {
		return 0, false
	}
	return float64(*w.Syscalls) / float64(w.Events), true
}

// syscallsPerSec is false without a count.
func (w *costWindow) syscallsPerSec() (float64, bool) {
	if w == nil || w.Syscalls == nil || w.Seconds <= 0 {
		return 0, false
	}
	return float64(*w.Syscalls) / w.Seconds, true
}

// CostRatio compares two contenders' CPU per event at one rate, round by
// round, judged on the median.
type CostRatio struct {
	Of     string    `json:"of"`
	To     string    `json:"to"`
	Rate   float64   `json:"rate"`
	Rounds []float64 `json:"rounds"`
	Median float64   `json:"median"`
}

// costPairs are the CPU-per-event ratios node-cost gives: evspool fsync'd
// against the least a durable emitter does, evspool without fsync (and
// with it) against syslog-ng's reliable disk buffer, which does not fsync
// either, and what the spool format's meta bucket adds to the least.
var costPairs = [][2]string{{cEvspoolFsync, cLeastDurable}, {cEvspoolNoFsync, cSyslogNG}, {cEvspoolFsync, cSyslogNG}, {cLeastMeta, cLeastDurable}, {cEvspoolKeys, cEvspoolFsync}, {cEvspoolFsync, cEvspoolBase}}

// costRatios is, for each of costPairs and each rate, the first contender's
// CPU per event over the second's, for the rounds where both ran.
func costRatios(rows []*CostRow, rates []float64) []CostRatio {
	var out []CostRatio
	for _, pair := range costPairs {
		for _, rate := range rates {
			cr := CostRatio{Of: pair[0], To: pair[1], Rate: rate}
			of, to := map[int]float64{}, map[int]float64{}
			var rounds []int
			for _, r := range rows {
				switch {
				case r.Rate != rate:
				case r.Contender == pair[0]:
					of[r.Round] = r.Paced.cpuMsPer1k()
					rounds = append(rounds, r.Round)
				case r.Contender == pair[1]:
					to[r.Round] = r.Paced.cpuMsPer1k()
				}
			}
			for _, k := range rounds {
				if d, ok := to[k]; ok && d > 0 {
					cr.Rounds = append(cr.Rounds, of[k]/d)
				}
			}
			if len(cr.Rounds) > 0 {
				cr.Median = median(cr.Rounds)
				out = append(out, cr)
			}
		}
	}
	return out
}

// runNodeCost runs node-cost: round by round, each rate in turn, the
// contenders one after the other from a rotated start.
func runNodeCost(tmp, profileDir string, sc scenario, contenders []string, prog *progress, res *Results) *NodeCost {
	nc := &NodeCost{LoadAvgBefore: loadAvg()}
	start := time.Now()
	for round := range sc.Rounds {
		for _, rate := range sc.Rates {
			for _, c := range rotate(contenders, round) {
				one := sc
				one.Rate = rate
				prog.begin(fmt.Sprintf("%s %s %.0f/s round %d/%d", sc.Name, c, rate, round+1, sc.Rounds))
				rr, err := runOne(tmp, profileDir, &one, c)
				runtime.GC()
				debug.FreeOSMemory()
				if err != nil {
					res.Errors = append(res.Errors, err.Error())
					prog.end("error: " + err.Error())
					continue
				}
				row := rr.cost
				row.Round, row.Sent, row.Lost = round, rr.Sent, rr.Lost
				if row.PerfError != "" && nc.PerfError == "" {
					nc.PerfError = row.PerfError
				}
				nc.Rows = append(nc.Rows, row)
				prog.end(fmt.Sprintf("%s ms CPU per 1,000 events, %d of %d lost", ms(row.Paced.cpuMsPer1k()), rr.Lost, rr.Sent))
			}
		}
	}
	nc.Ratios = costRatios(nc.Rows, sc.Rates)
	nc.LoadAvgAfter, nc.WallSeconds = loadAvg(), time.Since(start).Seconds()
	return nc
}
