package main

import (
	"fmt"
	"io"
	"strings"
)

// printReport writes the results as Markdown: the machine, the table, the
// evspool-run comparison, the targets and the headline.
func printReport(w io.Writer, res *Results) {
	m := res.Machine
	fmt.Fprintf(w, "## %s — %s\n\n", res.Name, m.Date)
	fmt.Fprintf(w, "%d × %s, %s, Linux %s, spool on %s (%s), load average %s → %s, evspool %s, %.0f s\n\n",
		m.CPUs, m.CPUModel, m.GoVersion, m.Kernel, m.SpoolFS, m.SpoolDir, m.LoadAvgFrom, m.LoadAvgTo, m.Evspool, m.WallSeconds)
	for _, note := range res.Skipped {
		fmt.Fprintf(w, "SKIPPED: %s\n\n", note)
	}
	if len(res.Figures) > 0 {
		printTable(w, res)
	}
	printPeer(w, res)
	if res.NodeCost != nil {
		printNodeCost(w, res.NodeCost)
	}
	if res.CLICost != nil {
		printCLICost(w, res.CLICost, res.NodeCost)
	}
	if e := res.E2E; e != nil {
		fmt.Fprintln(w)
		if e.Error != "" {
			fmt.Fprintf(w, "evspool run vs raw bbolt: error: %s\n", e.Error)
		} else {
			fmt.Fprintf(w, "`evspool run` (stdin → fast receiver, fsync on) %s events/s vs raw bbolt group commit %s events/s "+
				"(%d events × %d rounds, alternated): **%.2f×** median of the rounds (%s), %.2f× pooled; evspool run peak RssAnon %s; "+
				"it exited %.2f s after starting (median; the last events wait out the replay window's linger)\n",
				humanRate(e.EvspoolRunPerSec), humanRate(e.RawBoltPerSec), e.Events, len(e.RawBoltSeconds), e.MedianRatio,
				ratios(e.RoundRatios), e.Ratio, mib(e.EvspoolRunRSSAnon), median(e.EvspoolExitSeconds))
			if len(e.P2Ratios) > 0 {
				fmt.Fprintf(w, "\nControl, the same evspool run with GOMAXPROCS=2 (it runs on one P unless told): its time over the plain side's **%.2f×** median (%s); above 1, one P is faster\n",
					median(e.P2Ratios), ratios(e.P2Ratios))
			}
		}
	}
	fmt.Fprintln(w, "\n| target | measured | met |\n|---|---|---|")
	for _, t := range res.Targets {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Name, t.Measured, t.verdict())
	}
	for _, f := range res.Figures {
		for _, msg := range f.Failures {
			fmt.Fprintf(w, "\n%s/%s: %s\n", f.Scenario, f.Contender, msg)
		}
	}
	fmt.Fprintf(w, "\n%s\n", res.Headline)
	for _, e := range res.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
}

func printTable(w io.Writer, res *Results) {
	fmt.Fprintln(w, "| scenario | contender | events/s | sent | lost | dup | out of order | verify | latency p50 / p99 / p99.9 ms | resume p50 / max ms | Emit call p99 / max ms | RssAnon peak | spool peak | CPU µs / event |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|")
	for _, f := range res.Figures {
		lost := fmt.Sprint(f.Lost)
		if f.Undelivered > 0 {
			lost += fmt.Sprintf(" (+%d pending)", f.Undelivered)
		}
		var cpuNs int64
		for _, r := range f.Rounds {
			cpuNs += r.CPUNs
		}
		cpu := "–"
		if f.Sent > 0 {
			cpu = ms(float64(cpuNs) / 1e3 / float64(f.Sent))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %d | %d | %s | %s | %s | %s / %s | %s | %s | %s |\n",
			f.Scenario, f.Contender, humanRate(f.EventsPerSec), f.Sent, lost, f.Duplicates, f.OutOfOrder,
			verifyCell(f), latencyCell(f.LatencyMs), resumeCell(f),
			ms(f.EmitCallMs[1]), ms(f.EmitCallMs[2]), mib(f.PeakRSSAnon), spoolCell(f), cpu)
	}
}

// verifyCell says whether internal/verify's promise held and, if not, why.
func verifyCell(f *Figures) string {
	if f.VerifyOK {
		return "ok"
	}
	var why []string
	if f.Lost+f.Undelivered > 0 {
		why = append(why, "loss")
	}
	if f.VerifyJumps > 0 && f.Lost == 0 {
		why = append(why, "order")
	}
	if f.Foreign > 0 {
		why = append(why, fmt.Sprintf("%d torn", f.Foreign))
	}
	if len(f.Failures) > 0 {
		why = append(why, "could not restart")
	}
	return "FAIL: " + strings.Join(why, ", ")
}

func latencyCell(p Percentiles) string {
	if p.Count == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s / %s", ms(p.P50), ms(p.P99), ms(p.P999))
}

func resumeCell(f *Figures) string {
	if f.ResumeMs == nil {
		return "–"
	}
	s := "–"
	if f.ResumeMs.Count > 0 {
		s = fmt.Sprintf("%s / %s", ms(f.ResumeMs.P50), ms(f.ResumeMs.Max))
	}
	if f.NeverResumed > 0 {
		s += fmt.Sprintf(" (%d never)", f.NeverResumed)
	}
	return s
}

func spoolCell(f *Figures) string {
	if !spooled(f.Contender) {
		return "–"
	}
	return mib(f.PeakSpool)
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// humanRate prints an events/s figure with three significant digits.
func humanRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.0f", v), ".0")
}
