package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is a test's or a package's elapsed seconds.
type timing struct {
	name    string
	seconds float64
}

// summary collects a run's timings and failures.
type summary struct {
	output   map[string][]string // test output, by package and test, until it passes
	tests    []timing
	packages []timing
	failed   bool
}

func newSummary() *summary { return &summary{output: map[string][]string{}} }

// read consumes the stream, writing package verdicts and failed tests'
// output to w as they come. Lines that are not JSON (a build error) are
// copied through.
func (s *summary) read(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintln(w, string(line))
			continue
		}
		s.step(&ev, w)
	}
	return sc.Err()
}

func (s *summary) step(ev *event, w io.Writer) {
	key := ev.Package + " " + ev.Test
	switch ev.Action {
	case "output":
		if ev.Test != "" {
			s.output[key] = append(s.output[key], ev.Output)
		} else if isVerdict(ev.Output) {
			fmt.Fprint(w, ev.Output)
		} else {
			s.output[key] = append(s.output[key], ev.Output)
		}
	case "build-output":
		fmt.Fprint(w, ev.Output)
	case "build-fail":
		s.failed = true
	case "pass", "skip":
		if ev.Test != "" && !strings.Contains(ev.Test, "/") && ev.Action == "pass" {
			s.tests = append(s.tests, timing{ev.Package + " " + ev.Test, ev.Elapsed})
		}
		if ev.Test == "" {
			s.packages = append(s.packages, timing{ev.Package, ev.Elapsed})
		}
		delete(s.output, key)
	case "fail":
		s.failed = true
		if ev.Test == "" {
			s.packages = append(s.packages, timing{ev.Package, ev.Elapsed})
		}
		for _, l := range s.output[key] {
			fmt.Fprint(w, l)
		}
		delete(s.output, key)
	}
}

// isVerdict reports whether a package-level line is go test's verdict
// ("ok  pkg 1.2s", "FAIL pkg", "?  pkg [no test files]").
func isVerdict(out string) bool {
	for _, p := range []string{"ok  ", "FAIL", "?   ", "--- FAIL", "panic:"} {
		if strings.HasPrefix(out, p) {
			return true
		}
	}
	return false
}

// print writes each package's time and the n slowest tests.
func (s *summary) print(w io.Writer, n int) {
	byTime := func(ts []timing) {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].seconds > ts[j].seconds })
	}
	byTime(s.packages)
	byTime(s.tests)
	fmt.Fprintln(w, "\npackage times (packages run in parallel):")
	for _, p := range s.packages {
		if p.seconds > 0 {
			fmt.Fprintf(w, "  %7.1fs  %s\n", p.seconds, p.name)
		}
	}
	fmt.Fprintf(w, "the %d slowest tests:\n", n)
	for _, t := range s.tests[:min(n, len(s.tests))] {
		fmt.Fprintf(w, "  %7.1fs  %s\n", t.seconds, t.name)
	}
}
