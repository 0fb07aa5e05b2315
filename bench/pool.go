package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// Pooling: a ratio taken on a shared machine moves by a tenth and more from
// run to run, so a target is judged on the median of every round of several
// runs of the same command, not on one run's.
const (
	poolMinRounds = 9
	poolMinRuns   = 3
)

// pooled is one comparison's rounds gathered from several results files.
type pooled struct {
	Name   string
	Target float64 // 0: none
	AtMost bool    // the target is a ceiling (a cost), not a floor
	Runs   int
	Rounds []float64
}

// verdict says whether the pool is large enough to judge, and if so whether
// its median meets the target.
func (p *pooled) verdict() string {
	switch {
	case p.Target == 0:
		return "no target"
	case len(p.Rounds) < poolMinRounds || p.Runs < poolMinRuns:
		return fmt.Sprintf("not judged: %d rounds from %d runs (at least %d from %d)", len(p.Rounds), p.Runs, poolMinRounds, poolMinRuns)
	case p.AtMost && median(p.Rounds) <= p.Target, !p.AtMost && median(p.Rounds) >= p.Target:
		return "yes"
	}
	return "no"
}

// target prints the target with its direction.
func (p *pooled) target() string {
	switch {
	case p.Target == 0:
		return "–"
	case p.AtMost:
		return fmt.Sprintf("≤ %.2f×", p.Target)
	}
	return fmt.Sprintf("≥ %.2f×", p.Target)
}

// costTargets are the ceilings on node-cost's CPU-per-event ratios: evspool
// fsync'd against least-durable, and without fsync against syslog-ng.
var costTargets = map[[2]string]float64{
	{cEvspoolFsync, cLeastDurable}: 1.0,
	{cEvspoolNoFsync, cSyslogNG}:   1.2,
}

// poolCeilings gathers the library-vs-raw-bbolt rounds of every results
// file, comparison by comparison, in the order they first appear.
func poolCeilings(results []*Results) []*pooled {
	var out []*pooled
	byName := map[string]*pooled{}
	for _, r := range results {
		for _, c := range r.Ceilings {
			if len(c.RoundRatios) == 0 {
				continue
			}
			p := byName[c.Name]
			if p == nil {
				p = &pooled{Name: c.Name, Target: c.Target}
				byName[c.Name] = p
				out = append(out, p)
			}
			p.Runs++
			p.Rounds = append(p.Rounds, c.RoundRatios...)
		}
	}
	return out
}

// poolCosts gathers node-cost's ratio rounds of every results file, pair
// and rate by pair and rate, in the order they first appear.
func poolCosts(results []*Results) []*pooled {
	var out []*pooled
	byName := map[string]*pooled{}
	for _, r := range results {
		if r.NodeCost == nil {
			continue
		}
		for _, cr := range r.NodeCost.Ratios {
			name := fmt.Sprintf("node-cost %s / %s, %s/s", cr.Of, cr.To, humanRate(cr.Rate))
			p := byName[name]
			if p == nil {
				p = &pooled{Name: name, Target: costTargets[[2]string{cr.Of, cr.To}], AtMost: true}
				byName[name] = p
				out = append(out, p)
			}
			p.Runs++
			p.Rounds = append(p.Rounds, cr.Rounds...)
		}
	}
	return out
}

// poolCLICosts gathers cli-cost's ratio rounds of every results file, rate
// by rate. They have no target: the figure is reported, not judged.
func poolCLICosts(results []*Results) []*pooled {
	var out []*pooled
	byName := map[string]*pooled{}
	for _, r := range results {
		if r.CLICost == nil {
			continue
		}
		for _, cr := range r.CLICost.Ratios {
			name := fmt.Sprintf("%s %s / %s, %s/s", cliCost, cr.Of, cr.To, humanRate(cr.Rate))
			p := byName[name]
			if p == nil {
				p = &pooled{Name: name}
				byName[name] = p
				out = append(out, p)
			}
			p.Runs++
			p.Rounds = append(p.Rounds, cr.Rounds...)
		}
	}
	return out
}

// poolMain prints the pooled median, spread and verdict of each comparison
// in the results files named.
func poolMain(files []string, w io.Writer) error {
	var results []*Results
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Results
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		results = append(results, &r)
	}
	fmt.Fprintf(w, "| comparison | target | pooled median | spread | rounds (runs) | met |\n|---|--:|--:|--:|--:|---|\n")
	for _, p := range slices.Concat(poolCeilings(results), poolCosts(results), poolCLICosts(results)) {
		fmt.Fprintf(w, "| %s | %s | **%.2f×** | %.2f-%.2f× | %d (%d) | %s |\n", p.Name, p.target(), median(p.Rounds),
			slices.Min(p.Rounds), slices.Max(p.Rounds), len(p.Rounds), p.Runs, p.verdict())
	}
	return nil
}
