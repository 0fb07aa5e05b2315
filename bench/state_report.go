package main

import (
	"fmt"
	"io"
)

// printStateReport writes the state scenario's results as Markdown.
func printStateReport(w io.Writer, res *StateResults) {
	m, c := res.Machine, res.Config
	fmt.Fprintf(w, "## %s — %s\n\n", res.Name, m.Date)
	fmt.Fprintf(w, "%d × %s, %s, Linux %s, %s, evspool %s\n\n", m.CPUs, m.CPUModel, m.GoVersion, m.Kernel, m.SpoolFS, m.Evspool)
	fmt.Fprintf(w, "A v2-like receiver (refrecv.V2: one connection at a time, status_request on each, a cache that publishes "+
		"changes only, %v a line) fed a T-GM + T-BC node's v2 stream for %v. Faults: receiver killed 5 times (down %v), "+
		"sender killed 3 times (down %v, the stream pausing meanwhile, as a dead daemon produces nothing), or both. "+
		"*end*: keys missing or different once delivery is over; *restart*: the same %v after a receiver restart with "+
		"nothing new sent; *first looks*: keys of the state so far missing from the receiver's %v after each of its restarts "+
		"(or just before its next kill). Publishes are matched to a fault-free receiver's (every line once, in order). "+
		"The on-change stream sends only the messages that change a key, as a daemon that sends on change.\n\n",
		c.HandleTime, c.Duration, c.ReceiverDown, c.SenderDown, c.Look, c.Look)
	if res.Baseline != "" {
		fmt.Fprintf(w, "evspool-base is evspool run at %s, without state keys (the figures before).\n\n", res.Baseline)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "SKIPPED: %s\n\n", s)
	}
	fmt.Fprintln(w, "| rate | stream | faults | contender | sent | handled | dropped | end keys wrong | restart keys wrong | keys missing at first looks | transitions | missing | out of order | extra | extra / fault |")
	fmt.Fprintln(w, "|--:|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range res.Rows {
		if r.Error != "" {
			fmt.Fprintf(w, "| %g | %s | %s | %s | error: %s ||||||||||\n", r.Rate, r.Stream, r.Fault, r.Contender, r.Error)
			continue
		}
		p := r.Publishes
		looks := "—"
		if r.FirstLooks > 0 {
			looks = fmt.Sprintf("%d over %d looks", r.FirstLookMissing, r.FirstLooks)
		}
		fmt.Fprintf(w, "| %g | %s | %s | %s | %d | %d | %d | %d / %d | %d / %d | %s | %d | %d | %d | %d | %.1f |\n",
			r.Rate, r.Stream, r.Fault, r.Contender, r.Sent, r.Handled, r.Dropped, r.EndWrong, r.Keys, r.LookWrong, r.Keys,
			looks, p.Reference, p.Missing, p.OutOfOrder, p.Extra, r.ExtraPerFault)
	}
	if len(res.Writeback) > 0 {
		fmt.Fprintf(w, "\nA receiver that writes a line back after every %d it handles (blocking writes):\n\n", writebackEvery)
		fmt.Fprintln(w, "| contender | handled / sent | written back | handed to the embedder | dropped | rate | s |\n|---|--:|--:|--:|--:|--:|--:|")
		for _, r := range res.Writeback {
			if r.Error != "" {
				fmt.Fprintf(w, "| %s | error: %s ||||||\n", r.Contender, r.Error)
				continue
			}
			got := "—"
			if r.Received >= 0 {
				got = fmt.Sprint(r.Received)
			}
			fmt.Fprintf(w, "| %s | %d / %d | %d | %s | %d | %g/s | %.1f |\n", r.Contender, r.Handled, r.Sent, r.Written, got, r.Dropped, r.Rate, r.Seconds)
		}
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
}
