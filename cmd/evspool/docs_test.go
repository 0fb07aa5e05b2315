package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter/metrics"
)

// The docs are checked against the CLI they describe: docs/operations.md
// lists exactly the flags each command's --help shows and exactly the
// metrics /metrics exports, every --flag and evspool_* name the README and
// docs mention exists, and every evspool command line in them goes through
// the CLI's own flag parsing (as deploy_test.go does for deploy/).

const repoRoot = "../.."

// docFiles are the pages checked, relative to the repository's root.
var docFiles = []string{"README.md", "docs/delivery.md", "docs/operations.md", "docs/daemon.md", "docs/spool.md", "bench/README.md"}

var subcommands = []string{"run", "exec", "inspect", "sink", "demo"}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, name))
	require.NoError(t, err)
	return string(raw)
}

// helpFlags returns the flags `evspool cmd --help` lists.
func helpFlags(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	out, err := exec.Command(binary, cmd, "--help").Output()
	require.NoError(t, err, "evspool %s --help", cmd)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	require.NotEmpty(t, flags, "evspool %s --help lists flags", cmd)
	return flags
}

// flagTables returns, per command, the flags in docs/operations.md's
// "### `cmd` ... flags" tables (first cell of each row).
func flagTables(doc string) map[string]map[string]bool {
	tables := map[string]map[string]bool{}
	var cmds []string
	heading := regexp.MustCompile("^### (.*) flags$")
	row := regexp.MustCompile("^\\| `--([a-z0-9-]+)")
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			cmds = nil
			if m := heading.FindStringSubmatch(line); m != nil {
				for _, c := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(m[1], -1) {
					cmds = append(cmds, c[1])
				}
			}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil {
			for _, c := range cmds {
				if tables[c] == nil {
					tables[c] = map[string]bool{}
				}
				tables[c][m[1]] = true
			}
		}
	}
	return tables
}

func TestDocsListEveryFlag(t *testing.T) {
	t.Parallel()
	tables := flagTables(readDoc(t, "docs/operations.md"))
	all := map[string]bool{"help": true, "version": true}
	for _, cmd := range subcommands {
		help := helpFlags(t, cmd)
		for f := range help {
			all[f] = true
			assert.True(t, tables[cmd][f], "evspool %s --%s is in --help but not in docs/operations.md's %s flags table", cmd, f, cmd)
		}
		for f := range tables[cmd] {
			assert.True(t, help[f], "docs/operations.md lists --%s for %s, which evspool %s --help does not have", f, cmd, cmd)
		}
	}
	// Any --flag named anywhere in the docs is one some command has, or
	// one deploy/kubernetes.yaml gives its kube-rbac-proxy container.
	// (assert, not require: one run lists every mismatch.)
	for f := range proxyFlags(t) {
		all[f] = true
	}
	for _, name := range docFiles {
		for _, m := range regexp.MustCompile(`(?:^|[\s\x60(\[|])--([a-z][a-z0-9-]+)`).FindAllStringSubmatch(readDoc(t, name), -1) {
			assert.True(t, all[m[1]], "%s mentions --%s, which no evspool command has", name, m[1])
		}
	}
}

// proxyFlags are the flags deploy/kubernetes.yaml passes to its
// kube-rbac-proxy container, which docs/operations.md describes.
func proxyFlags(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(deployDir, "kubernetes.yaml"))
	require.NoError(t, err)
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []k8sContainer `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	require.NoError(t, decodeKind(raw, "DaemonSet", &ds))
	flags := map[string]bool{}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != "kube-rbac-proxy" {
			continue
		}
		for _, a := range c.Args {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			flags[name] = true
		}
	}
	require.NotEmpty(t, flags, "kubernetes.yaml's kube-rbac-proxy container has flags")
	return flags
}

// exportedMetrics are the evspool_* names /metrics serves.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	for _, c := range cliCollectors(nil, metrics.NewCommitHistogram()) {
		c.Describe(ch)
	}
	close(ch)
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		if strings.HasPrefix(m[1], "evspool_") {
			names[m[1]] = true
		}
	}
	require.Greater(t, len(names), 10)
	return names
}

func TestDocsListEveryMetric(t *testing.T) {
	t.Parallel()
	exported := exportedMetrics(t)
	doc := readDoc(t, "docs/operations.md")
	_, table, ok := strings.Cut(doc, "\n## Metrics\n")
	require.True(t, ok, "docs/operations.md has a Metrics section")
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(evspool_[a-z_]+)").FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	for name := range exported {
		assert.True(t, listed[name], "%s is exported but not in docs/operations.md's metrics table", name)
	}
	for name := range listed {
		assert.True(t, exported[name], "docs/operations.md's metrics table lists %s, which is not exported", name)
	}
	// Any evspool_* name in the docs (alerts, prose) is exported.
	for _, name := range docFiles {
		for _, m := range regexp.MustCompile(`\bevspool_[a-z_]+[a-z]`).FindAllString(readDoc(t, name), -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suffix); ok && exported[b] {
					base = b
				}
			}
			assert.True(t, exported[base], "%s mentions %s, which is not exported", name, m)
		}
	}
}

func TestDocsCommandLines(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, name := range docFiles {
		for _, cl := range commandLines(readDoc(t, name)) {
			where := fmt.Sprintf("%s: evspool %s %s", name, cl.cmd, cl.rest)
			assert.NoError(t, checkCommandLine(cl), where)
			checked++
		}
	}
	require.Greater(t, checked, 10, "command lines found in the docs")
}

// commandLine is one `evspool cmd ...` found in the docs' code.
type commandLine struct {
	cmd, rest string
}

// commandLines finds the evspool command lines in a page's code: fenced
// and indented blocks, and inline code spans.
func commandLines(doc string) []commandLine {
	var code []string
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case fenced, strings.HasPrefix(line, "    "), strings.HasPrefix(line, "\t"):
			code = append(code, line)
		default:
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
				code = append(code, m[1])
			}
		}
	}
	re := regexp.MustCompile(`(?:^|[\s$(/|])evspool\s+(run|exec|inspect|sink|demo)\b([^|#\n]*)`)
	var out []commandLine
	for _, c := range code {
		for _, m := range re.FindAllStringSubmatch(c, -1) {
			out = append(out, commandLine{cmd: m[1], rest: strings.TrimSpace(m[2])})
		}
	}
	return out
}

// checkCommandLine parses one command line with the command's own flag set.
// A synopsis (with [optional] parts or ...) only has its flag names checked;
// a bare `evspool run` is a name, not a command line.
func checkCommandLine(cl commandLine) error {
	if cl.rest == "" {
		return nil
	}
	fs, validate := commandFlagSet(cl.cmd)
	if strings.ContainsAny(cl.rest, "[…") || strings.Contains(cl.rest, "...") {
		for _, w := range strings.Fields(cl.rest) {
			name, _, _ := strings.Cut(strings.TrimLeft(strings.Trim(w, "[]"), "-"), "=")
			if strings.HasPrefix(strings.Trim(w, "["), "--") && name != "" && fs.Lookup(name) == nil {
				return fmt.Errorf("synopsis names --%s, which evspool %s does not have", name, cl.cmd)
			}
		}
		return nil
	}
	args, err := splitWords(cl.rest)
	if err != nil {
		return err
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cl.cmd == "exec" {
		if fs.NArg() == 0 {
			return errors.New("exec needs a COMMAND after --")
		}
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return validate()
}

// commandFlagSet returns cmd's flag set and the check of its values.
func commandFlagSet(cmd string) (*flag.FlagSet, func() error) {
	switch cmd {
	case "run", "exec":
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		var rf runFlags
		rf.register(fs)
		if cmd == "exec" {
			registerExec(fs)
		}
		return fs, rf.validate
	case "inspect":
		fs, o := inspectFlagSet()
		return fs, func() error { return required("--spool", *o.dir) }
	case "sink":
		fs, o := sinkFlagSet()
		return fs, func() error { return required("--socket", *o.socket) }
	default:
		fs, _ := demoFlagSet()
		return fs, func() error { return nil }
	}
}

func required(flag, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", flag)
	}
	return nil
}

// The checks catch what they are for: a table row too many or missing, a
// metric renamed, a command line with a flag that does not exist.
func TestDocsChecksCatch(t *testing.T) {
	t.Parallel()
	tables := flagTables("### `sink` flags\n\n| `--socket PATH` | x |\n| `--bogus` | y |\n## next\n| `--nope` |")
	require.Equal(t, map[string]map[string]bool{"sink": {"socket": true, "bogus": true}}, tables)

	lines := commandLines("text `evspool run --socket s --spool d` more\n\n    ptp4l | evspool run --sokket s --spool d\n```\n$ evspool inspect --spool d --dump 2 # comment\n```\n")
	require.Len(t, lines, 3)
	require.NoError(t, checkCommandLine(lines[0]))
	require.ErrorContains(t, checkCommandLine(lines[1]), "sokket")
	require.NoError(t, checkCommandLine(lines[2]))
	require.ErrorContains(t, checkCommandLine(commandLine{"run", "--socket s --spool d --replay-linger 0s"}), "--replay-linger")
	require.ErrorContains(t, checkCommandLine(commandLine{"exec", "--socket s --spool d"}), "COMMAND")
	require.ErrorContains(t, checkCommandLine(commandLine{"inspect", "--spool DIR [--jsn]"}), "--jsn")
	require.ErrorContains(t, checkCommandLine(commandLine{"inspect", "--json"}), "--spool is required")

	names := make([]string, 0)
	for n := range exportedMetrics(t) {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Contains(t, names, "evspool_build_info", "the CLI's own metric is in")
	require.Contains(t, names, "evspool_commit_duration_seconds", "the commit histogram is in")
}
