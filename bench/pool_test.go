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
