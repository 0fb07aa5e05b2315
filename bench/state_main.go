package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// StateResults is what `go run . state` writes to results/<name>.json.
type StateResults struct {
	Name      string         `json:"name"`
	Baseline  string         `json:"baseline,omitempty"` // the commit evspool-base was built at
	Machine   Machine        `json:"machine"`
	Config    stateConfig    `json:"config"`
	Rows      []StateRow     `json:"rows"`
	Writeback []WritebackRow `json:"writeback,omitempty"`
	Skipped   []string       `json:"skipped,omitempty"`
	Errors    []string       `json:"errors,omitempty"`
}

// stateOptions are the state scenario's flags.
type stateOptions struct {
	name, outDir, tmp, root string
	baseline                string
	contenders, faults      []string
	rates                   []float64
	cfg                     stateConfig
	wbLines                 int
	onChange                bool
	wbRate                  float64
}

func parseStateOptions(args []string) (*stateOptions, error) {
	o := &stateOptions{cfg: stateConfig{ReceiverDown: time.Second, SenderDown: 500 * time.Millisecond,
		HandleTime: 200 * time.Microsecond, Look: 1500 * time.Millisecond, Quiet: time.Second}}
	fs := flag.NewFlagSet("bench state", flag.ContinueOnError)
	fs.StringVar(&o.name, "name", "state", "results name: results/<name>.json and .md")
	fs.StringVar(&o.outDir, "out", "results", "directory for the results")
	fs.StringVar(&o.tmp, "tmp", os.TempDir(), "where spools and sockets go")
	fs.StringVar(&o.root, "root", "..", "the evspool repository, for building cmd/evspool")
	fs.StringVar(&o.baseline, "baseline", "", "a commit of the repository: adds evspool-base, its evspool run without state keys (the figures before)")
	contenders := fs.String("contenders", "", "comma-separated contenders (default all: evspool-state,evspool,link,reconnect-only)")
	faults := fs.String("faults", "", "comma-separated fault modes (default all: none,receiver,sender,both)")
	rates := fs.String("rates", "50,500", "comma-separated stream rates, messages/s")
	fs.DurationVar(&o.cfg.Duration, "duration", 12*time.Second, "how long each run's stream lasts")
	fs.DurationVar(&o.cfg.Look, "look", o.cfg.Look, "how long after a receiver restart its state is looked at")
	fs.BoolVar(&o.onChange, "on-change", true, "also run a daemon that sends changes only, receiver killed 5 times, at each rate")
	fs.IntVar(&o.wbLines, "writeback-lines", 20_000, "messages of the writeback case (0: skip it)")
	fs.Float64Var(&o.wbRate, "writeback-rate", 2000, "messages/s of the writeback case")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.contenders, o.faults = splitList(*contenders), splitList(*faults)
	if o.contenders == nil {
		o.contenders = stateContenders
	}
	if o.faults == nil {
		o.faults = stateFaults
	}
	for _, s := range splitList(*rates) {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || r <= 0 {
			return nil, fmt.Errorf("bench state: bad rate %q", s)
		}
		o.rates = append(o.rates, r)
	}
	return o, nil
}

// stateMain runs the state scenario: go run . state [flags].
func stateMain(args []string) int {
	o, err := parseStateOptions(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	res, err := runStateAll(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench state:", err)
		return 1
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench state:", err)
		return 1
	}
	out, md := filepath.Join(o.outDir, o.name+".json"), filepath.Join(o.outDir, o.name+".md")
	var report bytes.Buffer
	printStateReport(&report, res)
	if err := errors.Join(writeJSON(out, res), os.WriteFile(md, report.Bytes(), 0o644)); err != nil {
		fmt.Fprintln(os.Stderr, "bench state:", err)
		return 1
	}
	os.Stdout.Write(report.Bytes())
	fmt.Printf("\nresults: %s and %s\n", out, md)
	if len(res.Errors) > 0 {
		return 1
	}
	return 0
}

func runStateAll(o *stateOptions) (*StateResults, error) {
	msgs, err := parseStream(ptpV2Messages)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.tmp, "evstate")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res := &StateResults{Name: o.name, Machine: machineFacts(tmp, o.root), Config: o.cfg}
	bins, err := buildStateBins(tmp, o, res)
	if err != nil {
		return nil, err
	}
	contenders := o.contenders
	if slices.Contains(contenders, sEvspoolState) && !evspoolSupportsState(bins.cur) {
		contenders = slices.DeleteFunc(slices.Clone(contenders), func(c string) bool { return c == sEvspoolState })
		res.Skipped = append(res.Skipped, sEvspoolState+": this evspool's run has no --state-key")
	}
	if bins.base != "" {
		contenders = append(slices.Clone(contenders), sEvspoolBase)
	}
	wbContenders := append(slices.Clone(contenders), sEvspoolLib)
	steps := len(contenders) * len(o.rates) * len(o.faults)
	if o.onChange {
		steps += len(contenders) * len(o.rates)
	}
	if o.wbLines > 0 {
		steps += len(wbContenders)
	}
	prog := newProgress(steps)
	type run struct{ mode, stream string }
	var runs []run
	for _, mode := range o.faults {
		runs = append(runs, run{mode, streamAll})
	}
	if o.onChange {
		runs = append(runs, run{stReceiver, streamOnChange})
	}
	for _, rate := range o.rates {
		for _, rn := range runs {
			for _, c := range contenders {
				label := fmt.Sprintf("state %s %g/s %s %s", c, rate, rn.mode, rn.stream)
				prog.begin(label)
				row := runState(tmp, bins, msgs, o.cfg, c, rate, rn.mode, rn.stream)
				res.Rows = append(res.Rows, row)
				prog.end(stateSummary(row))
				if row.Error != "" {
					res.Errors = append(res.Errors, label+": "+row.Error)
				}
			}
		}
	}
	if o.wbLines > 0 {
		for _, c := range wbContenders {
			prog.begin("writeback " + c)
			row := runWriteback(tmp, bins, c, o.wbLines, o.wbRate, 3*time.Second)
			res.Writeback = append(res.Writeback, row)
			prog.end(fmt.Sprintf("%d / %d handled", row.Handled, row.Sent))
			if row.Error != "" {
				res.Errors = append(res.Errors, fmt.Sprintf("writeback %s: %s", c, row.Error))
			}
		}
	}
	prog.finish()
	res.Machine.LoadAvgTo = loadAvg()
	return res, nil
}

// buildStateBins builds cmd/evspool from the repository and, with
// -baseline, from that commit's tree (git archive: the repository's work
// tree and index are left alone).
func buildStateBins(tmp string, o *stateOptions, res *StateResults) (evspoolBins, error) {
	bins := evspoolBins{cur: filepath.Join(tmp, "evspool")}
	if err := goBuild(o.root, bins.cur); err != nil {
		return bins, err
	}
	if o.baseline == "" {
		return bins, nil
	}
	rev, err := exec.Command("git", "-C", o.root, "rev-parse", "--short", o.baseline+"^{commit}").Output()
	if err != nil {
		return bins, fmt.Errorf("baseline %s: %v", o.baseline, err)
	}
	res.Baseline = string(bytes.TrimSpace(rev))
	src := filepath.Join(tmp, "base-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return bins, err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", o.root, res.Baseline, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return bins, fmt.Errorf("baseline %s: %v: %s", res.Baseline, err, bytes.TrimSpace(out))
	}
	bins.base = filepath.Join(tmp, "evspool-base")
	return bins, goBuild(src, bins.base)
}

func goBuild(dir, out string) error {
	build := exec.Command("go", "build", "-o", out, "./cmd/evspool")
	build.Dir = dir
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build evspool in %s: %v: %s", dir, err, bytes.TrimSpace(b))
	}
	return nil
}

func stateSummary(r StateRow) string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	p := r.Publishes
	return fmt.Sprintf("end %d/%d keys wrong, after a restart %d, missing at first looks %d; publishes: %d missing, %d out of order, %d extra",
		r.EndWrong, r.Keys, r.LookWrong, r.FirstLookMissing, p.Missing, p.OutOfOrder, p.Extra)
}
