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
	Target float64
	Runs   int
	Rounds []float64
}

// verdict says whether the pool is large enough to judge, and if so whether
// its median meets the target.
func (p *pooled) verdict() string {
	if len(p.Rounds) < poolMinRounds || p.Runs < poolMinRuns {
		return fmt.Sprintf("not judged: %d rounds from %d runs (at least %d from %d)", len(p.Rounds), p.Runs, poolMinRounds, poolMinRuns)
	}
	if median(p.Rounds) >= p.Target {
		return "yes"
	}
	return "no"
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
	for _, p := range poolCeilings(results) {
		fmt.Fprintf(w, "| %s | %.2f× | **%.2f×** | %.2f-%.2f× | %d (%d) | %s |\n", p.Name, p.Target, median(p.Rounds),
			slices.Min(p.Rounds), slices.Max(p.Rounds), len(p.Rounds), p.Runs, p.verdict())
	}
	return nil
}
