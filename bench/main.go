package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "producer":
			os.Exit(producerMain(os.Args[2:]))
		case "rawbolt":
			os.Exit(rawBoltMain(os.Args[2:]))
		case "state":
			// go run . state: a v2 receiver's current state and publishes under faults
			os.Exit(stateMain(os.Args[2:]))
		case "perf-attrib":
			// go run . perf-attrib FILE.data...: where evspool run's CPU went
			os.Exit(perfAttribExit(os.Args[2:]))
		case "pool":
			// go run . pool results/a.json results/b.json ...
			if err := poolMain(os.Args[2:], os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "bench pool:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(harnessMain(os.Args[1:]))
}

// options of the harness.
type options struct {
	quick      bool
	name       string
	outDir     string
	tmp        string
	root       string
	contenders []string
	scenarios  []string
	e2eEvents  int
	e2eRounds  int
	skipE2E    bool
	// the library vs raw bbolt at the same commit size, and resume
	skipCeilings  bool
	ceilingRounds int
	rounds        int
	profileDir    string
	cliPerfDir    string
}

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&o.quick, "quick", false, "a subset that runs in about a minute and a half, node-cost's windows shortened")
	fs.StringVar(&o.name, "name", "", "results name: results/<name>.json (default quick or full)")
	fs.StringVar(&o.outDir, "out", "results", "directory for the JSON results and charts")
	fs.StringVar(&o.tmp, "tmp", os.TempDir(), "where spools and sockets go (its file system is recorded)")
	fs.StringVar(&o.root, "root", "..", "the evspool repository, for building cmd/evspool")
	contenders := fs.String("contenders", "", "comma-separated contenders (default: the plan's)")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios (default: the plan's)")
	fs.IntVar(&o.e2eEvents, "e2e-events", 0, "events per evspool-run/raw-bbolt round (default 50k quick, 200k full)")
	fs.IntVar(&o.e2eRounds, "e2e-rounds", 0, "rounds of that comparison (default 1 quick, 5 full)")
	fs.BoolVar(&o.skipE2E, "skip-e2e", false, "skip the evspool run vs raw bbolt comparison")
	fs.BoolVar(&o.skipCeilings, "skip-ceilings", false, "skip the library vs raw bbolt comparisons and the resume measurement")
	fs.IntVar(&o.ceilingRounds, "ceiling-rounds", 0, "rounds of each library vs raw bbolt comparison (default 1 quick, 3 full)")
	fs.IntVar(&o.rounds, "rounds", 0, "rounds per scenario (default: the plan's)")
	fs.StringVar(&o.profileDir, "cpuprofile-dir", "", "write a CPU profile of each producer process there")
	fs.StringVar(&o.cliPerfDir, "cli-perf-dir", "", "cli-cost: after each CPU window, `perf record -g` each emitter for as long again, into this directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.name == "" {
		o.name = map[bool]string{true: "quick", false: "full"}[o.quick]
	}
	o.contenders, o.scenarios = splitList(*contenders), splitList(*scenarios)
	if o.e2eEvents == 0 {
		o.e2eEvents = map[bool]int{true: 50_000, false: 200_000}[o.quick]
	}
	if o.ceilingRounds == 0 {
		o.ceilingRounds = map[bool]int{true: 1, false: 3}[o.quick]
	}
	if o.e2eRounds == 0 {
		o.e2eRounds = map[bool]int{true: 1, false: 5}[o.quick]
	}
	return o, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func harnessMain(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		return 2
	}
	res, err := runAll(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	out := filepath.Join(o.outDir, o.name+".json")
	if err := writeJSON(out, res); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	var report bytes.Buffer
	printReport(&report, res)
	md := filepath.Join(o.outDir, o.name+".md")
	if err := os.WriteFile(md, report.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	os.Stdout.Write(report.Bytes())
	fmt.Printf("\nresults: %s and %s\n", out, md)
	for _, c := range res.Charts {
		fmt.Printf("chart: %s\n", c)
	}
	if len(res.Errors) > 0 {
		return 1
	}
	return 0
}
