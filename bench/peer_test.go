package main

import (
	"math"
	"testing"
)

func TestPeerPlanSelection(t *testing.T) {
	got := selectScenarios(append(fullPlan(), peerPlan(false)...), []string{peerGroup, "steady"})
	var names []string
	for _, sc := range got {
		names = append(names, sc.Name)
	}
	if len(got) != 6 || got[0].Name != "steady" {
		t.Fatalf("selected %v, want steady and the 5 peer scenarios", names)
	}
	for _, sc := range got[1:] {
		if !isPeer(sc) || sc.RecvHandle != peerHandle || sc.Rounds != 3 || sc.Batch != 1 {
			t.Errorf("%s: %+v is not a peer scenario as the README describes it", sc.Name, sc)
		}
	}
}

// TestPeerFaultCounts: the peer scenarios strike as often as the issue's
// rows say, full length and -quick.
func TestPeerFaultCounts(t *testing.T) {
	want := map[string]int{"peer-1k-receiver-kills": 5, "peer-1k-emitter-kills": 3, "peer-1k-none": 0,
		"peer-100-receiver-kills": 5, "peer-100-none": 0}
	for _, quick := range []bool{false, true} {
		for _, sc := range peerPlan(quick) {
			r := &rig{sc: &sc}
			if n := len(r.faultTimes()); n != want[sc.Name] {
				t.Errorf("%s (quick %v): %d faults, want %d", sc.Name, quick, n, want[sc.Name])
			}
		}
	}
}

func TestRoundRatiosAndSpread(t *testing.T) {
	round := func(cpuNs, sent int64) *runResult { return &runResult{CPUNs: cpuNs, Sent: sent} }
	f := &Figures{Rounds: []*runResult{round(300_000, 1000), round(200_000, 1000), round(100_000, 1000)}}
	peer := &Figures{Rounds: []*runResult{round(100_000, 1000), round(100_000, 1000)}}
	rs := roundRatios(f, peer)
	if len(rs) != 2 || math.Abs(rs[0]-3) > 1e-9 || math.Abs(rs[1]-2) > 1e-9 {
		t.Fatalf("ratios %v, want 3, 2 (the third round has no peer)", rs)
	}
	if s := spread([]float64{2, 0, 5}, "%.0f"); s != "0-5" {
		t.Errorf("spread %q, want 0-5", s)
	}
	if s := spread([]float64{7, 7}, "%.0f"); s != "7" {
		t.Errorf("spread %q, want 7", s)
	}
}
