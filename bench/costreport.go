package main

import (
	"fmt"
	"io"
	"strings"
)

// printNodeCost writes node-cost's table, the evspool-fsync / least-durable
// ratios and the load average around it.
func printNodeCost(w io.Writer, nc *NodeCost) {
	fmt.Fprintf(w, "\n### %s\n\n", nodeCost)
	fmt.Fprintf(w, "Producer process CPU (user + system) and system calls; load average %s → %s, %.0f s.\n\n",
		nc.LoadAvgBefore, nc.LoadAvgAfter, nc.WallSeconds)
	fmt.Fprintln(w, "| rate | contender | CPU ms / 1,000 events | with perf attached | syscalls / event | Go allocs / event | malloc / event | idle syscalls / s | idle CPU ms / s | events/s | lost |")
	fmt.Fprintln(w, "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	var runNs, ticks int64
	for _, r := range nc.Rows {
		perfCPU := "n/a"
		if r.Perf != nil {
			perfCPU = ms(r.Perf.cpuMsPer1k())
		}
		var goAllocs, mallocs *int64
		if r.Perf != nil {
			goAllocs, mallocs = r.Perf.GoAllocs, r.Perf.Mallocs
		}
		fmt.Fprintf(w, "| %s/s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			humanRate(r.Rate), r.Contender, ms(r.Paced.cpuMsPer1k()), perfCPU,
			orNA(r.Perf.syscallsPerEvent()), orNA(r.Perf.perEvent(goAllocs)), orNA(r.Perf.perEvent(mallocs)),
			orNA(r.Idle.syscallsPerSec()), ms(r.Idle.cpuMsPerSec()),
			humanRate(r.Paced.eventsPerSec()), r.Lost)
		for _, cw := range []*costWindow{&r.Paced, r.Perf, &r.Idle} {
			if cw != nil {
				runNs, ticks = runNs+cw.CPUNs, ticks+cw.CPUTicks
			}
		}
	}
	fmt.Fprintln(w)
	for _, pair := range costPairs {
		var parts []string
		for _, cr := range nc.Ratios {
			if cr.Of == pair[0] && cr.To == pair[1] {
				parts = append(parts, fmt.Sprintf("%s/s **%.2f×** (rounds %s)", humanRate(cr.Rate), cr.Median, ratios(cr.Rounds)))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s / %s, CPU per event: %s.\n", pair[0], pair[1], strings.Join(parts, ", "))
		}
	}
	fmt.Fprintf(w, "\nCPU is the producer threads' run time (/proc/<pid>/task/*/schedstat); /proc/<pid>/stat's utime + stime over the same windows: %d ms against %.0f ms (10 ms ticks).\n",
		ticks*1000/userHZ, float64(runNs)/1e6)
	if nc.PerfError != "" {
		fmt.Fprintf(w, "\nsyscall columns n/a: %s\n", nc.PerfError)
	}
}

// orNA prints a figure with two decimals, or n/a when there is none.
func orNA(v float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}
