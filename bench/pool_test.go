package main

import (
	"math"
	"strings"
	"testing"
)

func TestPoolCeilings(t *testing.T) {
	row := func(name string, ratios ...float64) *Ceiling {
		return &Ceiling{Name: name, Target: 0.85, RoundRatios: ratios}
	}
	runs := []*Results{
		{Ceilings: []*Ceiling{row("64", 0.80, 0.90, 0.95), row("100", 1.0)}},
		{Ceilings: []*Ceiling{row("64", 0.70, 0.86, 0.88)}},
		{Ceilings: []*Ceiling{row("64", 0.84, 0.99, 0.87), row("100")}},
	}
	p := poolCeilings(runs)
	if len(p) != 2 || p[0].Name != "64" || p[0].Runs != 3 || len(p[0].Rounds) != 9 {
		t.Fatalf("pooled %+v", p)
	}
	if m := median(p[0].Rounds); math.Abs(m-0.87) > 1e-9 {
		t.Fatalf("median %v, want 0.87", m)
	}
	if v := p[0].verdict(); v != "yes" {
		t.Fatalf("verdict %q, want yes", v)
	}
	if v := p[1].verdict(); !strings.HasPrefix(v, "not judged: 1 rounds from 1 runs") {
		t.Fatalf("a row of one round judged: %q", v)
	}
	runs[2].Ceilings[0] = row("64", 0.50, 0.60, 0.70)
	if v := poolCeilings(runs)[0].verdict(); v != "no" {
		t.Fatalf("verdict %q, want no", v)
	}
}

func TestPoolCosts(t *testing.T) {
	nc := func(rounds ...float64) *NodeCost {
		return &NodeCost{Ratios: []CostRatio{
			{Of: cEvspoolFsync, To: cLeastDurable, Rate: 100, Rounds: rounds},
			{Of: cLeastMeta, To: cLeastDurable, Rate: 100, Rounds: []float64{1}},
		}}
	}
	runs := []*Results{{NodeCost: nc(0.9, 1.0, 1.1)}, {}, {NodeCost: nc(0.95, 0.99, 1.3)}, {NodeCost: nc(0.97, 1.0, 0.98)}}
	p := poolCosts(runs)
	if len(p) != 2 || p[0].Runs != 3 || len(p[0].Rounds) != 9 || p[0].Target != 1.0 || !p[0].AtMost {
		t.Fatalf("pooled %+v", p)
	}
	if m := median(p[0].Rounds); math.Abs(m-0.99) > 1e-9 {
		t.Fatalf("median %v, want 0.99", m)
	}
	if v := p[0].verdict(); v != "yes" {
		t.Fatalf("a cost at 0.99× of a 1.0× ceiling: verdict %q, want yes", v)
	}
	if v := p[1].verdict(); v != "no target" {
		t.Fatalf("the meta bucket's ratio has no target: verdict %q", v)
	}
	runs[3].NodeCost = nc(1.05, 1.02, 1.03)
	if v := poolCosts(runs)[0].verdict(); v != "no" {
		t.Fatalf("median 1.02× against ≤ 1.0×: verdict %q, want no", v)
	}
}
