package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// perfAttrib is `go run . perf-attrib FILE.data...`: where an `evspool run`
// process's CPU went, from `perf record -g` files (cli-cost's
// -cli-perf-dir), in the parts an operator can name. Each sample goes to
// the part of the frame nearest its leaf that names one, so what bbolt or
// the runtime does for a caller (a page write, an allocation and its GC
// assist) is charged to that caller; a stack with no frame of evspool's is
// the Go runtime's own (the sysmon thread, idle threads looking for work,
// the GC's background workers).
func perfAttribMain(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("perf-attrib", flag.ContinueOnError)
	top := fs.Int("top", 0, "also list the N leaf functions of the samples no part names")
	lines := fs.Int64("lines", 0, "the lines the recorded window carried (rate × seconds): adds µs a line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: go run . perf-attrib [-top N] FILE.data...")
	}
	counts, periods := map[string]int{}, map[string]int64{}
	unnamed := map[string]int{}
	total := 0
	for _, f := range fs.Args() {
		cmd := exec.Command("perf", "script", "-i", f, "-F", "period,ip,sym")
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("perf script: %w", err)
		}
		eachStack(out, func(period int64, frames []string) {
			part := attribute(frames)
			counts[part]++
			periods[part] += period
			total++
			if part == partOther && len(frames) > 0 {
				unnamed[frames[0]]++
			}
		})
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("perf script -i %s: %w", f, err)
		}
	}
	if total == 0 {
		return fmt.Errorf("no samples in %s", strings.Join(fs.Args(), ", "))
	}
	perLine := func(ns int64) string {
		if *lines <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", float64(ns)/1e3/float64(*lines))
	}
	var all int64
	fmt.Fprintf(w, "| part | samples | share | CPU µs a line |\n|---|--:|--:|--:|\n")
	for _, p := range attribParts {
		all += periods[p]
		fmt.Fprintf(w, "| %s | %d | %.1f%% | %s |\n", p, counts[p], 100*float64(counts[p])/float64(total), perLine(periods[p]))
	}
	fmt.Fprintf(w, "| all | %d | 100%% | %s |\n", total, perLine(all))
	if *top > 0 {
		printTop(w, unnamed, *top)
	}
	return nil
}

// eachStack calls f with each sample's period (ns of CPU for perf's
// cpu-clock) and frames, leaf first, from `perf script -F period,ip,sym`
// output: a header line holding the period, then one "ip sym" line a
// frame, then a blank line.
func eachStack(r io.Reader, f func(period int64, frames []string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var frames []string
	var period int64
	inSample := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			if inSample {
				f(period, frames)
			}
			frames, inSample = frames[:0], false
			continue
		}
		if !inSample {
			inSample = true
			period, _ = strconv.ParseInt(strings.Fields(line)[0], 10, 64)
			continue
		}
		if _, sym, ok := strings.Cut(line, " "); ok {
			frames = append(frames, strings.TrimSpace(sym))
		}
	}
	if inSample {
		f(period, frames)
	}
}

// The parts of perf-attrib's table, in its order.
const (
	partStdin   = "stdin: reading and splitting lines (cmd/evspool)"
	partForward = "cmd/evspool's forwarding loop"
	partCommit  = "spool commit: Emit, wal append, bbolt"
	partEcho    = "echo to stdout"
	partWrite   = "socket write: the send, its gate and inline path"
	partLooks   = "looks at the socket: SIOCOUTQ, hang-up poll, await read"
	partAcks    = "acknowledgements: Ack, marks, deferred deletion, removal"
	partRead    = "drainer: spool reads"
	partDrainer = "drainer: loop, delivery steps, wake-ups"
	partGC      = "Go runtime: GC background work"
	partSysmon  = "Go runtime: sysmon"
	partSched   = "Go runtime: scheduler, idle threads, timers, netpoll"
	partOther   = "other (no part named)"
)

var attribParts = []string{partStdin, partForward, partCommit, partEcho, partWrite, partLooks, partAcks,
	partRead, partDrainer, partGC, partSysmon, partSched, partOther}

// attribute names the part of one sample's stack.
func attribute(frames []string) string {
	for _, fn := range frames {
		if p := framePart(fn); p != "" {
			return p
		}
	}
	for _, fn := range frames {
		switch {
		case strings.Contains(fn, "gcBgMarkWorker"), strings.Contains(fn, "bgsweep"), strings.Contains(fn, "bgscavenge"):
			return partGC
		case strings.Contains(fn, "runtime.sysmon"):
			return partSysmon
		}
	}
	if slices.ContainsFunc(frames, func(fn string) bool { return strings.HasPrefix(fn, "runtime.") }) {
		return partSched
	}
	return partOther
}

// framePart is the part one frame names, "" if none: evspool's own frames
// by package and name; bbolt's, the runtime's and the kernel's name none.
func framePart(fn string) string {
	lower := strings.ToLower(fn)
	switch {
	case strings.HasPrefix(fn, "main."):
		if strings.Contains(lower, "readline") || strings.Contains(lower, "scan") {
			return partStdin
		}
		return partForward
	case !strings.Contains(fn, "evspool/evspool/"):
		return ""
	case strings.Contains(lower, "echo"):
		return partEcho
	case strings.Contains(fn, "sockwait."), strings.Contains(fn, ").check"), strings.Contains(fn, ").probed"),
		strings.Contains(lower, "waitread"), strings.Contains(lower, "awaitread"):
		return partLooks
	case strings.Contains(fn, "Ack"), strings.Contains(fn, ").ack"), strings.Contains(fn, ".ack"), strings.Contains(fn, "removeFront"), strings.Contains(fn, "removeTx"),
		strings.Contains(fn, "deleteHidden"), strings.Contains(fn, "(*marks)"), strings.Contains(fn, "readSpans"),
		strings.Contains(fn, "(*state).remove"):
		return partAcks
	case strings.Contains(fn, "wal.(*WAL).Read"), strings.Contains(fn, "readNext"):
		return partRead
	case strings.Contains(fn, "/emitter.(*drainer)") && (strings.Contains(lower, "write") || strings.Contains(lower, "send") ||
		strings.Contains(lower, "inline") || strings.Contains(lower, "gate")):
		return partWrite
	case strings.Contains(fn, "/emitter.(*Emitter)"), strings.Contains(fn, "/emitter.Validate"), strings.Contains(fn, "/wal."):
		return partCommit
	case strings.Contains(fn, "/emitter.("), strings.Contains(fn, "/delivery."):
		return partDrainer
	}
	return ""
}

// printTop lists the n most sampled leaf functions of counts.
func printTop(w io.Writer, counts map[string]int, n int) {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range counts {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return b.v - a.v })
	fmt.Fprintf(w, "\n%s, leaf functions:\n", partOther)
	for _, e := range all[:min(n, len(all))] {
		fmt.Fprintf(w, "- %s: %d\n", e.k, e.v)
	}
}

// perfAttribExit runs perf-attrib for main.
func perfAttribExit(args []string) int {
	if err := perfAttribMain(args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench perf-attrib:", err)
		return 1
	}
	return 0
}
