package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"time"
)

// Results is everything a run of the suite writes to results/<name>.json.
type Results struct {
	Name       string     `json:"name"`
	Machine    Machine    `json:"machine"`
	Contenders []string   `json:"contenders"`
	Scenarios  []scenario `json:"scenarios"`
	Figures    []*Figures `json:"figures"`
	E2E        *E2E       `json:"e2e,omitempty"`
	Ceilings   []*Ceiling `json:"ceilings,omitempty"`
	Resume     *ResumeFig `json:"resume,omitempty"`
	NodeCost   *NodeCost  `json:"node_cost,omitempty"`
	CLICost    *CLICost   `json:"cli_cost,omitempty"`
	Targets    []Target   `json:"targets"`
	Headline   string     `json:"headline"`
	Charts     []string   `json:"charts,omitempty"`
	Skipped    []string   `json:"skipped,omitempty"` // contenders that cannot run here, and why
	Errors     []string   `json:"errors,omitempty"`
}

// runAll runs the plan: the e2e comparison, then the scenarios round by
// round (round 1 of every scenario, then round 2, ...), each round going
// through the contenders from a rotated start, so that a noisy neighbour
// spreads over all of them and a scenario's rounds sit next to another's.
func runAll(o *options) (*Results, error) {
	plan, contenders := fullPlan(), allContenders
	if o.quick {
		plan, contenders = quickPlan(), quickContenders
	}
	if o.contenders != nil {
		contenders = o.contenders
	}
	if o.scenarios != nil {
		plan = selectScenarios(append(fullPlan(), peerPlan(o.quick)...), o.scenarios)
	}
	for i := range plan {
		if plan[i].Name == nodeCost {
			plan[i] = costScenario(o.quick) // -quick shortens its windows, named or not
		}
		if o.rounds > 0 {
			plan[i].Rounds = o.rounds
		}
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.tmp, "evbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res := &Results{Name: o.name, Machine: machineFacts(tmp, o.root), Contenders: contenders, Scenarios: plan}
	start := time.Now()
	prog := newProgress(countSteps(plan, len(contenders), o))
	if !o.skipE2E {
		res.E2E = runE2E(tmp, o.root, o.e2eEvents, o.e2eRounds, prog)
		if res.E2E.Error != "" {
			res.Errors = append(res.Errors, "evspool run vs raw bbolt: "+res.E2E.Error)
		}
	}
	if !o.skipCeilings {
		res.Ceilings, res.Resume = runCeilings(tmp, o.quick, o.ceilingRounds, prog)
		for _, c := range res.Ceilings {
			if c.Error != "" {
				res.Errors = append(res.Errors, c.Name+": "+c.Error)
			}
		}
		if res.Resume.Error != "" {
			res.Errors = append(res.Errors, "resume: "+res.Resume.Error)
		}
	}
	matrix := slices.DeleteFunc(slices.Clone(plan), func(sc scenario) bool { return sc.Name == nodeCost || isPeer(sc) })
	res.Figures = runRounds(tmp, o.profileDir, matrix, usable(contenders, res), prog, res)
	if peers := slices.DeleteFunc(slices.Clone(plan), func(sc scenario) bool { return !isPeer(sc) }); len(peers) > 0 {
		pc := peerContenders
		if o.contenders != nil {
			pc = o.contenders
		}
		res.Figures = append(res.Figures, runRounds(tmp, o.profileDir, peers, usable(pc, res), prog, res)...)
	}
	if i := slices.IndexFunc(plan, func(sc scenario) bool { return sc.Name == nodeCost }); i >= 0 {
		res.NodeCost = runNodeCost(tmp, o.profileDir, plan[i], usable(costContenders(plan[i], o), res), prog, res)
	}
	if slices.Contains(o.scenarios, cliCost) {
		plan := newCLICostPlan(o.quick, o.rounds)
		plan.PerfDir = o.cliPerfDir
		res.CLICost = runCLICost(tmp, o.root, plan, prog, res)
	}
	prog.finish()
	res.Machine.LoadAvgTo, res.Machine.WallSeconds = loadAvg(), time.Since(start).Seconds()
	res.Targets, res.Headline = targets(res), headline(res)
	if !o.quick {
		res.Charts = drawCharts(o.outDir, res)
	}
	return res, nil
}

// runRounds runs every round of every scenario and pools each contender's
// rounds per scenario. Scenarios of one Group run back to back for each
// contender, so that a ratio between them is measured side by side.
func runRounds(tmp, profileDir string, plan []scenario, contenders []string, prog *progress, res *Results) []*Figures {
	type key struct{ scenario, contender string }
	rounds := map[key][]*runResult{}
	maxRounds := 0
	for _, sc := range plan {
		maxRounds = max(maxRounds, sc.Rounds)
	}
	for r := range maxRounds {
		for ui, unit := range groupPlan(plan) {
			for _, c := range rotate(contenders, r+ui) {
				for _, sc := range unit {
					if r >= sc.Rounds {
						continue
					}
					prog.begin(fmt.Sprintf("%s %s round %d/%d", sc.Name, c, r+1, sc.Rounds))
					rr, err := runOne(tmp, profileDir, sc, c)
					runtime.GC()
					debug.FreeOSMemory()
					if err != nil {
						res.Errors = append(res.Errors, err.Error())
						prog.end("error: " + err.Error())
						continue
					}
					rounds[key{sc.Name, c}] = append(rounds[key{sc.Name, c}], rr)
					prog.end(roundSummary(rr))
				}
			}
		}
	}
	var out []*Figures
	for _, sc := range plan {
		for _, c := range contenders {
			if rr := rounds[key{sc.Name, c}]; len(rr) > 0 {
				out = append(out, aggregate(rr))
			}
		}
	}
	return out
}

// usable returns the contenders that can run on this machine, and notes
// in res why each other one is skipped.
func usable(contenders []string, res *Results) []string {
	var out []string
	for _, c := range contenders {
		why := unavailable(c)
		if why == "" {
			out = append(out, c)
			continue
		}
		if note := c + " skipped: " + why; !slices.Contains(res.Skipped, note) {
			res.Skipped = append(res.Skipped, note)
		}
	}
	return out
}

// groupPlan cuts the plan into units: consecutive scenarios sharing a Group,
// or one scenario.
func groupPlan(plan []scenario) [][]*scenario {
	var units [][]*scenario
	for i := range plan {
		sc := &plan[i]
		if n := len(units); n > 0 && sc.Group != "" && units[n-1][0].Group == sc.Group {
			units[n-1] = append(units[n-1], sc)
			continue
		}
		units = append(units, []*scenario{sc})
	}
	return units
}

func rotate[T any](xs []T, k int) []T {
	if len(xs) == 0 {
		return xs
	}
	k %= len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// selectScenarios picks the named scenarios; "peer" names every peer
// scenario.
func selectScenarios(all []scenario, names []string) []scenario {
	var out []scenario
	for _, s := range all {
		if slices.Contains(names, s.Name) || (isPeer(s) && slices.Contains(names, peerGroup)) {
			out = append(out, s)
		}
	}
	return out
}

// costContenders are node-cost's own unless -contenders names some.
func costContenders(sc scenario, o *options) []string {
	if o.contenders != nil {
		return o.contenders
	}
	return sc.Contenders
}

func countSteps(plan []scenario, contenders int, o *options) int {
	n := 0
	for _, s := range plan {
		if s.Name == nodeCost {
			n += s.Rounds * len(s.Rates) * len(costContenders(s, o))
			continue
		}
		if isPeer(s) && o.contenders == nil {
			n += s.Rounds * len(peerContenders)
			continue
		}
		n += s.Rounds * contenders
	}
	if slices.Contains(o.scenarios, cliCost) {
		p := newCLICostPlan(o.quick, o.rounds)
		n += p.Rounds * len(p.Rates)
	}
	if !o.skipE2E {
		n += 3 * o.e2eRounds
	}
	if !o.skipCeilings {
		n += 3*2*o.ceilingRounds + 1
	}
	return n
}

func roundSummary(r *runResult) string {
	return fmt.Sprintf("%s events/s, %d of %d lost, %d dup, %d out of order",
		humanRate(r.eventsPerSec()), r.Lost, r.Sent, r.Duplicates, r.OutOfOrder)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
