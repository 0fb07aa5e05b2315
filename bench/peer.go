package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// peerGroup names the scenarios that put evspool beside what an SRE runs in
// front of such a socket today, syslog-ng with a reliable disk buffer:
// numbered lines at a daemon's rates, one per Emit (one write a line into
// syslog-ng's stdin), to a receiver shaped like cloud-event-proxy (a 4 KiB
// read-ahead, 0.2 ms to handle a line, so a kill loses what it read and had
// not handled), with the same fault moments for every contender. `-scenarios
// peer` names them all.
const peerGroup = "peer"

// peerContenders run in the peer scenarios unless -contenders names others.
var peerContenders = []string{cEvspoolFsync, cEvspoolNoFsync, cSyslogNG}

// peerHandle is the receiver's handling time per line in the peer
// scenarios.
const peerHandle = 200 * time.Microsecond

// peerPlan is the peer scenarios: at 1,000 lines/s for 20 s (the receiver
// SIGKILLed 5 times, the emitter SIGKILLed 3 times, no faults) and at
// 100 lines/s for 60 s (the receiver SIGKILLed 5 times, no faults), 3 rounds.
// quick shortens them to 8 s and 20 s with as many faults.
func peerPlan(quick bool) []scenario {
	s := time.Second
	fast, slow := 20*s, 60*s
	fastKills, slowKills, emitterKills := 3500*time.Millisecond, 10*s, 5*s
	if quick {
		fast, slow = 8*s, 20*s
		fastKills, slowKills, emitterKills = 1300*time.Millisecond, 3500*time.Millisecond, 2*s
	}
	down := 300 * time.Millisecond
	one := func(name, desc string, rate float64, d time.Duration, f fault, period time.Duration) scenario {
		sc := scenario{Name: name, Description: desc, Mode: "paced", Duration: d, Batch: 1, Rate: rate,
			RecvHandle: peerHandle, Fault: f, Period: period, Rounds: 3, Group: peerGroup}
		if f == faultRestart {
			sc.Down = down
		}
		return sc
	}
	return []scenario{
		one("peer-1k-receiver-kills", "1,000 lines/s, the receiver SIGKILLed 5 times (back 300 ms later)", 1000, fast, faultRestart, fastKills),
		one("peer-1k-emitter-kills", "1,000 lines/s, the emitter SIGKILLed 3 times and started again", 1000, fast, faultSigkill, emitterKills),
		one("peer-1k-none", "1,000 lines/s, no faults", 1000, fast, faultNone, 0),
		one("peer-100-receiver-kills", "100 lines/s, the receiver SIGKILLed 5 times (back 300 ms later)", 100, slow, faultRestart, slowKills),
		one("peer-100-none", "100 lines/s, no faults", 100, slow, faultNone, 0),
	}
}

func isPeer(sc scenario) bool { return sc.Group == peerGroup }

// printPeer writes the peer scenarios' table: per scenario and contender,
// lost and duplicates (the rounds' range), CPU per line (median and range
// of the rounds) and its ratio to syslog-ng-reliable's in the same round.
func printPeer(w io.Writer, res *Results) {
	var figs []*Figures
	for _, f := range res.Figures {
		if strings.HasPrefix(f.Scenario, peerGroup+"-") {
			figs = append(figs, f)
		}
	}
	if len(figs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### evspool beside syslog-ng (the peer scenarios)\n\n")
	fmt.Fprintf(w, "Receiver like cloud-event-proxy (4 KiB read-ahead, %v a line); CPU is the producer processes' and their descendants' (syslog-ng's) over the run, start-up and drain included, per line handed over; the producer's own part is the daemon's making of the lines and, for syslog-ng, writing them to its stdin. Lost counts what a drain left pending too.\n\n", peerHandle)
	fmt.Fprintln(w, "| scenario | contender | rounds | sent | lost | dups | out of order | CPU µs / line | of which descendants' | / syslog-ng's, same round |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, f := range figs {
		var peer *Figures
		for _, g := range figs {
			if g.Scenario == f.Scenario && g.Contender == cSyslogNG {
				peer = g
			}
		}
		ratio := "–"
		if peer != nil && peer != f {
			if rs := roundRatios(f, peer); len(rs) > 0 {
				ratio = fmt.Sprintf("**%.2f×** (%s)", median(rs), spread(rs, "%.2f"))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", f.Scenario, f.Contender, len(f.Rounds),
			f.Sent, rangeOf(f, func(r *runResult) float64 { return float64(r.Lost + r.Undelivered) }, "%.0f"),
			rangeOf(f, func(r *runResult) float64 { return float64(r.Duplicates) }, "%.0f"),
			rangeOf(f, func(r *runResult) float64 { return float64(r.OutOfOrder) }, "%.0f"),
			cpuCell(f, (*runResult).cpuUsPerEvent), cpuCell(f, (*runResult).descCPUUsPerEvent), ratio)
	}
}

// roundRatios is f's CPU per line over peer's, round by round.
func roundRatios(f, peer *Figures) []float64 {
	var out []float64
	for i, r := range f.Rounds {
		if i < len(peer.Rounds) {
			if d := peer.Rounds[i].cpuUsPerEvent(); d > 0 {
				out = append(out, r.cpuUsPerEvent()/d)
			}
		}
	}
	return out
}

func cpuCell(f *Figures, v func(*runResult) float64) string {
	var xs []float64
	for _, r := range f.Rounds {
		xs = append(xs, v(r))
	}
	return fmt.Sprintf("%.0f (%s)", median(xs), spread(xs, "%.0f"))
}

// rangeOf prints the rounds' values of v as "lo-hi", or one value.
func rangeOf(f *Figures, v func(*runResult) float64, format string) string {
	var xs []float64
	for _, r := range f.Rounds {
		xs = append(xs, v(r))
	}
	return spread(xs, format)
}

func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if fmt.Sprintf(format, lo) == fmt.Sprintf(format, hi) {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+"-"+format, lo, hi)
}
