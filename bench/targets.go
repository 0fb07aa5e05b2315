package main

import (
	"fmt"
	"strings"
)

// Target is one of the issues' goals and whether this run met it.
type Target struct {
	Name     string `json:"name"`
	Measured string `json:"measured"`
	Met      *bool  `json:"met"` // nil: not measured in this run
}

func (t Target) verdict() string {
	switch {
	case t.Met == nil:
		return "not measured"
	case *t.Met:
		return "yes"
	}
	return "**NO**"
}

func met(b bool) *bool { return &b }

// find returns the figures of a contender in a scenario, or nil.
func (res *Results) find(scenario, contender string) *Figures {
	for _, f := range res.Figures {
		if f.Scenario == scenario && f.Contender == contender {
			return f
		}
	}
	return nil
}

func targets(res *Results) []Target {
	var out []Target
	for _, c := range []string{cEvspoolFsync, cEvspoolNoFsync} {
		out = append(out, orderTarget(res, c))
	}
	out = append(out, restartRatioTarget(res, cEvspoolFsync), resumeTarget(res, cEvspoolFsync))
	e := Target{Name: "`evspool run` ≥ 0.8 × raw bbolt group commit, median of side-by-side rounds", Measured: "–"}
	if x := res.E2E; x != nil && x.Error == "" {
		e.Measured = fmt.Sprintf("%.2f× (rounds %s; pooled %.2f×)", x.MedianRatio, ratios(x.RoundRatios), x.Ratio)
		e.Met = met(x.MedianRatio >= 0.8)
	}
	out = append(out, e)
	out = append(out, ceilingTargets(res)...)
	r := Target{Name: "evspool RssAnon ≤ 64 MiB with a 1M-event backlog", Measured: "–"}
	if f := res.find("backlog", cEvspoolFsync); f != nil {
		r.Measured, r.Met = mib(f.PeakRSSAnon), met(f.PeakRSSAnon <= 64<<20)
	}
	out = append(out, r)
	p := Target{Name: "evspool p99 emit-to-received ≤ 5 ms at 1,000 events/s", Measured: "–"}
	if f := res.find("paced", cEvspoolFsync); f != nil {
		p.Measured, p.Met = ms(f.LatencyMs.P99)+" ms", met(f.LatencyMs.P99 <= 5)
	}
	return append(out, p)
}

// orderTarget: no loss, no reordering, in every scenario measured.
func orderTarget(res *Results, c string) Target {
	t := Target{Name: c + ": zero loss and zero reordering in every scenario"}
	var bad, seen []string
	for _, f := range res.Figures {
		if f.Contender != c {
			continue
		}
		seen = append(seen, f.Scenario)
		if f.Lost+f.Undelivered+f.OutOfOrder+f.VerifyJumps > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d lost, %d pending, %d out of order, %d skips",
				f.Scenario, f.Lost, f.Undelivered, f.OutOfOrder, f.VerifyJumps))
		}
	}
	if len(seen) == 0 {
		t.Measured = "–"
		return t
	}
	t.Met = met(len(bad) == 0)
	t.Measured = fmt.Sprintf("%d scenarios, 0 lost, 0 out of order", len(seen))
	if len(bad) > 0 {
		t.Measured = strings.Join(bad, "; ")
	}
	return t
}

// restartRatioTarget judges the median of the rounds' ratios: each round
// ran steady and restarts back to back.
func restartRatioTarget(res *Results, c string) Target {
	t := Target{Name: c + ": throughput under 2-second restarts ≥ 0.8 × steady, median of side-by-side rounds", Measured: "–"}
	s, r := res.find("steady", c), res.find("restarts", c)
	if s == nil || r == nil || s.EventsPerSec <= 0 {
		return t
	}
	var rounds []float64
	for i := range min(len(s.Rounds), len(r.Rounds)) {
		if sr := s.Rounds[i].eventsPerSec(); sr > 0 {
			rounds = append(rounds, r.Rounds[i].eventsPerSec()/sr)
		}
	}
	m := median(rounds)
	t.Measured = fmt.Sprintf("%.2f× (rounds %s; pooled %s vs %s events/s)", m, ratios(rounds),
		humanRate(r.EventsPerSec), humanRate(s.EventsPerSec))
	t.Met = met(m >= 0.8)
	return t
}

func ratios(xs []float64) string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(out, ", ")
}

func resumeTarget(res *Results, c string) Target {
	t := Target{Name: c + ": resume p50 ≤ 100 ms after the receiver returns", Measured: "–"}
	if f := res.find("restarts", c); f != nil && f.ResumeMs != nil && f.ResumeMs.Count > 0 {
		t.Measured = fmt.Sprintf("%s ms (max %s, %d restarts)", ms(f.ResumeMs.P50), ms(f.ResumeMs.Max), f.ResumeMs.Count)
		t.Met = met(f.ResumeMs.P50 <= 100 && f.NeverResumed == 0)
	}
	return t
}

// headline is the sentence for the top-level README.
func headline(res *Results) string {
	var parts []string
	es, wt := res.find("steady", cEvspoolFsync), res.find("steady", cWriteThrough)
	if es != nil && wt != nil && wt.EventsPerSec > 0 {
		parts = append(parts, fmt.Sprintf("evspool (fsync on, 100-event batches) delivers %s events/s, %.2f× write-through on the bare socket (%s events/s) measured side by side",
			humanRate(es.EventsPerSec), es.EventsPerSec/wt.EventsPerSec, humanRate(wt.EventsPerSec)))
	}
	if e := res.E2E; e != nil && e.Error == "" {
		parts = append(parts, fmt.Sprintf("`evspool run` from stdin to a receiver reaches %.2f× raw bbolt group commit (median of %d side-by-side rounds; %s vs %s events/s pooled)",
			e.MedianRatio, len(e.RoundRatios), humanRate(e.EvspoolRunPerSec), humanRate(e.RawBoltPerSec)))
	}
	er, ro := res.find("restarts", cEvspoolFsync), res.find("restarts", cReconnectOnly)
	if er != nil && ro != nil && ro.Sent > 0 {
		parts = append(parts, fmt.Sprintf("with the receiver killed every 2 s evspool lost %d of %d events, reconnect-only %d of %d (%.1f%%)",
			er.Lost, er.Sent, ro.Lost, ro.Sent, 100*float64(ro.Lost)/float64(ro.Sent)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Headline: " + strings.Join(parts, "; ") + "."
}

// commitBreakdown says where a commit's time went on each side (medians of
// the rounds, µs): bbolt's page writes and fsyncs, the rest of the
// transaction, and the time between transactions (callers coming back,
// the group forming; raw bbolt formats its events inside the transaction).
func commitBreakdown(c *Ceiling) string {
	side := func(wall, tx, write []float64) string {
		w, t, wr := median(wall), median(tx), median(write)
		return fmt.Sprintf("%.0f µs (writes and fsyncs %.0f, rest of the transaction %.0f, between transactions %.0f)", w, wr, t-wr, w-t)
	}
	out := "evspool " + side(c.EvspoolCommitUs, c.EvspoolTxUs, c.EvspoolWriteUs) +
		" vs raw bbolt " + side(c.RawCommitUs, c.RawTxUs, c.RawWriteUs)
	if len(c.GroupCommitUs) > 0 {
		out += " and the least group commit " + side(c.GroupCommitUs, c.GroupTxUs, c.GroupWriteUs)
	}
	if len(c.SpoolCommitUs) > 0 {
		out += " and the spool alone " + side(c.SpoolCommitUs, c.SpoolTxUs, c.SpoolWriteUs)
	}
	return out
}

// ceilingTargets: the library against raw bbolt at the same commit size, and
// resume.
func ceilingTargets(res *Results) []Target {
	var out []Target
	for _, c := range res.Ceilings {
		t := Target{Name: fmt.Sprintf("%s ≥ %.2g×, median of side-by-side rounds", c.Name, c.Target), Measured: "–"}
		if c.Error == "" && len(c.RoundRatios) > 0 {
			t.Measured = fmt.Sprintf("%.2f× (rounds %s; %s vs %s events/s median)", c.MedianRatio, ratios(c.RoundRatios),
				humanRate(median(c.EvspoolPerSec)), humanRate(median(c.RawPerSec)))
			if len(c.EventsPerCommit) > 0 {
				t.Measured += fmt.Sprintf("; %.1f events per commit, Emit p99 %s ms (median of rounds)",
					median(c.EventsPerCommit), ms(median(c.EmitP99Ms)))
			}
			if len(c.EvspoolCommitUs) > 0 && len(c.RawCommitUs) > 0 {
				t.Measured += "; per commit, " + commitBreakdown(c)
			}
			if len(c.GroupVsRaw) > 0 {
				t.Measured += fmt.Sprintf("; the least a group commit of the same callers does on plain bbolt: %.2f× raw bbolt (rounds %s), evspool %.2f× of it (rounds %s)",
					median(c.GroupVsRaw), ratios(c.GroupVsRaw), median(c.EvspoolVsGroup), ratios(c.EvspoolVsGroup))
			}
			if len(c.SpoolVsRaw) > 0 {
				t.Measured += fmt.Sprintf("; the spool alone (the same callers on wal, read and acknowledged in this process, no socket): %.2f× raw bbolt (rounds %s), evspool %.2f× of it (rounds %s)",
					median(c.SpoolVsRaw), ratios(c.SpoolVsRaw), median(c.EvspoolVsSpool), ratios(c.EvspoolVsSpool))
			}
			t.Measured += fmt.Sprintf("; load average %s → %s", c.LoadAvgBefore, c.LoadAvgAfter)
			t.Met = met(c.MedianRatio >= c.Target)
		}
		out = append(out, t)
	}
	if r := res.Resume; r != nil {
		t := Target{Name: "library: resume p50 ≤ 10 ms, receiver listening again to first event received", Measured: "–"}
		if r.Error == "" && len(r.Ms) > 0 {
			t.Measured = fmt.Sprintf("%.2f ms (max %.2f, %d restarts)", r.P50Ms, r.MaxMs, len(r.Ms))
			t.Met = met(r.P50Ms <= 10)
		}
		out = append(out, t)
	}
	return out
}
