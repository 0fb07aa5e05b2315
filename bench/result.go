package main

import (
	"slices"
	"time"
)

// binWidth is the time resolution of the charts' series.
const binWidth = 100 * time.Millisecond

// runResult is one round of one contender in one scenario.
type runResult struct {
	Scenario     string     `json:"scenario"`
	Contender    string     `json:"contender"`
	Seconds      float64    `json:"seconds"` // from producing start to the last arrival
	Sent         int64      `json:"sent"`
	Delivered    int64      `json:"delivered"`
	Lost         int64      `json:"lost"`
	Undelivered  int64      `json:"undelivered"` // still spooled when the drain timed out
	Duplicates   int64      `json:"duplicates"`
	OutOfOrder   int64      `json:"out_of_order"`
	VerifyJumps  int64      `json:"verify_reordered"`
	Foreign      int64      `json:"foreign"`
	FirstForeign string     `json:"first_foreign,omitempty"` // a torn line, typically
	Dropped      uint64     `json:"dropped_by_contender"`
	EmitErrors   uint64     `json:"emit_errors"`
	Compactions  uint64     `json:"spool_compactions"`
	EmitCallMs   [3]float64 `json:"emit_call_ms_p50_p99_max"` // how long Emit held the producer
	Resumes      []float64  `json:"resume_ms"`
	NeverResumed int        `json:"never_resumed"`
	PeakRSSAnon  int64      `json:"peak_rss_anon_bytes"`
	FillRSSAnon  int64      `json:"backlog_fill_peak_rss_anon_bytes,omitempty"` // backlog: the filling process; PeakRSSAnon covers both
	PeakSpool    int64      `json:"peak_spool_bytes"`
	CPUNs        int64      `json:"cpu_ns"`             // the producer processes' and their descendants' CPU over the run (see sampler.close)
	DescCPUNs    int64      `json:"descendants_cpu_ns"` // the descendants' part (syslog-ng's)
	Outages      []interval `json:"outages"`
	T0           int64      `json:"t0_ns"`
	Series       []float64  `json:"series_events_per_sec,omitempty"` // per binWidth from T0
	Failures     []string   `json:"contender_failures,omitempty"`

	latencies []int64
	cost      *CostRow // node-cost's windows
}

// result turns what the rig observed into figures.
func (r *rig) result(rss, disk int64) *runResult {
	arr, foreign, firstForeign := r.col.take()
	extendSpans(r.sent, arr)
	d := check(r.sent, arr)
	res := &runResult{Scenario: r.sc.Name, Contender: r.contender, Sent: d.Sent, Delivered: d.Delivered,
		Undelivered: int64(r.pending), Duplicates: d.Duplicates, OutOfOrder: d.OutOfOrder, VerifyJumps: d.Jumps,
		Foreign: d.Foreign + int64(foreign), Dropped: r.dropped, EmitErrors: r.emitErrs,
		PeakSpool: disk, Outages: r.outages, T0: r.t0, latencies: d.latencies,
		Compactions: r.compacts, FirstForeign: firstForeign, FillRSSAnon: r.fillRSS, Failures: r.failures,
		cost: r.cost}
	res.PeakRSSAnon = max(rss, r.fillRSS)
	for i, v := range r.calls {
		res.EmitCallMs[i] = float64(v) / 1e6
	}
	res.Lost = max(0, d.Lost-res.Undelivered)
	if len(arr) > 0 {
		res.Seconds = float64(arr[len(arr)-1].atNs-r.t0) / 1e9
	}
	res.Resumes, res.NeverResumed = resumes(arr, r.outages)
	if r.sc.Chart {
		res.Series = series(arr, r.t0)
	}
	return res
}

// eventsPerSec is the round's delivered events per second.
func (r *runResult) eventsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Delivered) / r.Seconds
}

// cpuUsPerEvent is the round's CPU per event handed over, µs; 0 without
// events.
func (r *runResult) cpuUsPerEvent() float64 {
	if r.Sent <= 0 {
		return 0
	}
	return float64(r.CPUNs) / 1e3 / float64(r.Sent)
}

// descCPUUsPerEvent is the descendants' part of cpuUsPerEvent.
func (r *runResult) descCPUUsPerEvent() float64 {
	if r.Sent <= 0 {
		return 0
	}
	return float64(r.DescCPUNs) / 1e3 / float64(r.Sent)
}

// resumes returns, for each outage, the time from its end to the first
// arrival after it, in ms; an outage followed by no arrival before the next
// one counts as never resumed.
func resumes(arr []arrival, outages []interval) ([]float64, int) {
	var out []float64
	never := 0
	for k, o := range outages {
		i := firstAfter(arr, o.To)
		limit := int64(1<<63 - 1)
		if k+1 < len(outages) {
			limit = outages[k+1].From
		}
		if i == len(arr) || arr[i].atNs >= limit {
			never++
			continue
		}
		out = append(out, float64(arr[i].atNs-o.To)/1e6)
	}
	return out, never
}

// series counts arrivals per binWidth since t0, as events/s.
func series(arr []arrival, t0 int64) []float64 {
	var out []float64
	for _, a := range arr {
		b := int((a.atNs - t0) / int64(binWidth))
		if b < 0 {
			continue
		}
		for len(out) <= b {
			out = append(out, 0)
		}
		out[b] += float64(time.Second / binWidth)
	}
	return out
}

// percentile returns the p-th percentile (0..1) of sorted xs, 0 if empty.
func percentile[T int64 | float64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)))
	return sorted[min(i, len(sorted)-1)]
}

// median of xs, 0 if empty.
func median(xs []float64) float64 {
	s := sortedCopy(xs)
	switch n := len(s); {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func sortedCopy[T int64 | float64](xs []T) []T {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
