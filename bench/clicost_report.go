package main

import (
	"fmt"
	"io"
)

// printCLICost writes cli-cost's table, its ratios, and beside them
// node-cost's evspool-nofsync / syslog-ng-reliable when the run has it.
func printCLICost(w io.Writer, cc *CLICost, nc *NodeCost) {
	fmt.Fprintf(w, "\n### %s\n\n", cliCost)
	fmt.Fprintf(w, "As an SRE runs them: a generator (the harness, not counted) writes one line a write(2) into a pipe read by "+
		"`evspool run --fsync=false` (echo to /dev/null) and into another read by `syslog-ng -F` (syslog-ng-reliable's config), "+
		"side by side, each delivering to its own receiver; beside them a third pipe, O_NONBLOCK when evspool starts, "+
		"so that Go reads it through its poller (a control: evspool run sets the flag itself on a shell's blocking pipe), and a fourth with GOMAXPROCS=2 in its environment (a control: evspool run runs on one P unless the environment says otherwise). Each emitter process's own CPU "+
		"(its threads' run time, no children) over %.0f s after %.0f s of warm-up, per line its receiver got. "+
		"Load average %s → %s, %.0f s.\n\n",
		cc.Plan.Window.Seconds(), cc.Plan.Warmup.Seconds(), cc.LoadAvgBefore, cc.LoadAvgAfter, cc.WallSeconds)
	fmt.Fprintln(w, "| rate | round | emitter | CPU µs / line | utime + stime, ticks | lines/s | sent | received | extra |")
	fmt.Fprintln(w, "|--:|--:|---|--:|--:|--:|--:|--:|--:|")
	for _, r := range cc.Rows {
		fmt.Fprintf(w, "| %s/s | %d | %s | %s | %d | %s | %d | %d | %d |\n", humanRate(r.Rate), r.Round+1, r.Side,
			ms(r.Window.cpuMsPer1k()), r.Window.CPUTicks, humanRate(r.Window.eventsPerSec()), r.Sent, r.Received, r.Extra)
	}
	fmt.Fprintln(w)
	for _, cr := range cc.Ratios {
		fmt.Fprintf(w, "%s / %s, CPU a line, %s/s: **%.2f×** (rounds %s).\n", cr.Of, cr.To, humanRate(cr.Rate), cr.Median, ratios(cr.Rounds))
	}
	if nc == nil {
		return
	}
	for _, cr := range nc.Ratios {
		if cr.Of == cEvspoolNoFsync && cr.To == cSyslogNG {
			fmt.Fprintf(w, "Beside it, node-cost (the producer counted on both sides) %s / %s, %s/s: **%.2f×** (rounds %s).\n",
				cr.Of, cr.To, humanRate(cr.Rate), cr.Median, ratios(cr.Rounds))
		}
	}
}
