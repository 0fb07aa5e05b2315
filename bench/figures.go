package main

import (
	"math"
	"slices"
)

// Figures are one contender's results in one scenario, all rounds together.
type Figures struct {
	Scenario     string       `json:"scenario"`
	Contender    string       `json:"contender"`
	EventsPerSec float64      `json:"events_per_sec"` // delivered (first arrivals) / time, all rounds
	Sent         int64        `json:"sent"`
	Delivered    int64        `json:"delivered"`
	Lost         int64        `json:"lost"`
	Undelivered  int64        `json:"undelivered"`
	Duplicates   int64        `json:"duplicates"`
	OutOfOrder   int64        `json:"out_of_order"`
	VerifyJumps  int64        `json:"verify_reordered"`
	Foreign      int64        `json:"foreign"`
	VerifyOK     bool         `json:"verify_ok"` // internal/verify's promise: nothing missing, reordered or foreign
	LatencyMs    Percentiles  `json:"latency_ms"`
	ResumeMs     *Percentiles `json:"resume_ms,omitempty"`
	NeverResumed int          `json:"never_resumed"`
	PeakRSSAnon  int64        `json:"peak_rss_anon_bytes"`
	PeakSpool    int64        `json:"peak_spool_bytes"`
	EmitCallMs   [3]float64   `json:"emit_call_ms_p50_p99_max"` // worst round
	Failures     []string     `json:"contender_failures,omitempty"`
	Rounds       []*runResult `json:"rounds"`
}

// Percentiles of a distribution, in milliseconds.
type Percentiles struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
	Count int     `json:"count"`
}

// aggregate pools the rounds of one contender in one scenario.
func aggregate(rounds []*runResult) *Figures {
	f := &Figures{Scenario: rounds[0].Scenario, Contender: rounds[0].Contender, Rounds: rounds}
	var secs float64
	var lat []int64
	var res []float64
	for _, r := range rounds {
		secs += r.Seconds
		f.Sent += r.Sent
		f.Delivered += r.Delivered
		f.Lost += r.Lost
		f.Undelivered += r.Undelivered
		f.Duplicates += r.Duplicates
		f.OutOfOrder += r.OutOfOrder
		f.VerifyJumps += r.VerifyJumps
		f.Foreign += r.Foreign
		f.NeverResumed += r.NeverResumed
		f.PeakRSSAnon = max(f.PeakRSSAnon, r.PeakRSSAnon)
		f.PeakSpool = max(f.PeakSpool, r.PeakSpool)
		for i, v := range r.EmitCallMs {
			f.EmitCallMs[i] = max(f.EmitCallMs[i], v)
		}
		f.Failures = append(f.Failures, r.Failures...)
		lat = append(lat, r.latencies...)
		res = append(res, r.Resumes...)
	}
	if secs > 0 {
		f.EventsPerSec = float64(f.Delivered) / secs
	}
	f.VerifyOK = f.Lost == 0 && f.Undelivered == 0 && f.VerifyJumps == 0 && f.Foreign == 0
	f.LatencyMs = latencyPercentiles(lat)
	if len(res) > 0 || f.NeverResumed > 0 {
		p := floatPercentiles(res)
		f.ResumeMs = &p
	}
	return f
}

func latencyPercentiles(ns []int64) Percentiles {
	s := sortedCopy(ns)
	ms := func(v int64) float64 { return math.Round(float64(v)/1e3) / 1e3 }
	if len(s) == 0 {
		return Percentiles{}
	}
	return Percentiles{P50: ms(percentile(s, 0.50)), P99: ms(percentile(s, 0.99)), P999: ms(percentile(s, 0.999)),
		Max: ms(s[len(s)-1]), Count: len(s)}
}

func floatPercentiles(xs []float64) Percentiles {
	s := sortedCopy(xs)
	if len(s) == 0 {
		return Percentiles{}
	}
	return Percentiles{P50: percentile(s, 0.50), P99: percentile(s, 0.99), P999: percentile(s, 0.999),
		Max: slices.Max(s), Count: len(s)}
}
