package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// Classes of statement the docs make about the code, each checked against
// the code itself rather than against a copy of the figure: flag defaults,
// exit statuses, Go versions, links and anchors, references from shipped
// files to doc sections, and the Go snippets.

// markdownFiles are every .md file git tracks (bench/results included).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	require.NoError(t, err)
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.Stat(filepath.Join(repoRoot, f)); err == nil {
			files = append(files, f)
		}
	}
	require.Contains(t, files, "README.md")
	return files
}

// headingAnchors returns the GitHub anchors of a page's headings.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		anchors[slug(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
	}
	return anchors
}

// slug is GitHub's anchor of a heading: lower case, spaces to '-', and
// everything but letters, digits, '-' and '_' dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link in every .md file names a file that exists, and an
// anchor names a heading of that page.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, name := range markdownFiles(t) {
		doc := readDoc(t, name)
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(doc), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			file := name
			if path != "" {
				file = filepath.Join(filepath.Dir(name), path)
				_, err := os.Stat(filepath.Join(repoRoot, file))
				if !assert.NoError(t, err, "%s links to %s, which does not exist", name, target) {
					continue
				}
			}
			if anchor != "" {
				assert.True(t, headingAnchors(readDoc(t, file))[anchor], "%s links to %s: %s has no heading with that anchor", name, target, file)
			}
		}
	}
	require.Greater(t, checked, 20)
}

// stripCode drops fenced blocks and inline code, where [x](y) is not a link.
func stripCode(doc string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""))
		}
	}
	return strings.Join(out, "\n")
}

// installedDocs are the pages the package installs under
// /usr/share/doc/evspool, by their path in the repository.
func installedDocs(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "packaging/nfpm.yaml"))
	require.NoError(t, err)
	var cfg struct {
		Contents []struct {
			Src string `yaml:"src"`
			Dst string `yaml:"dst"`
		} `yaml:"contents"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	docs := map[string]bool{}
	for _, c := range cfg.Contents {
		rel, ok := strings.CutPrefix(c.Dst, "/usr/share/doc/evspool/")
		if ok && strings.HasSuffix(rel, ".md") {
			require.Equal(t, "../"+rel, c.Src, "an installed page keeps its path, so its relative links hold on a node")
			docs[rel] = true
		}
	}
	return docs
}

// docRef is `docs/x.md, "Section"` (or README.md) in a shipped file.
var docRef = regexp.MustCompile(`([A-Za-z0-9_./-]+\.md),?\s+(?:section\s+)?\\?"([^"\\]+)\\?"`)

// The files that ship (deploy/, packaging/) and the Makefile name doc
// sections that exist, in pages the package installs, so that what a node
// shows (a unit, a manifest, alert rules, the dashboard inside Grafana)
// points somewhere on that node.
func TestShippedFilesReferToDocs(t *testing.T) {
	t.Parallel()
	installed := installedDocs(t)
	require.True(t, installed["README.md"])
	require.True(t, installed["docs/operations.md"], "the package installs docs/ too")
	var files []string
	for _, dir := range []string{"deploy", "packaging", "packaging/scripts"} {
		entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
		require.NoError(t, err)
		for _, e := range entries {
			if !e.IsDir() && !strings.HasSuffix(e.Name(), ".go") && !strings.HasPrefix(e.Name(), "go.") {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	files = append(files, "Makefile")
	refs := 0
	for _, f := range files {
		text := readDoc(t, f)
		text = regexp.MustCompile(`\s*\n\s*#?\s*`).ReplaceAllString(text, " ") // a reference may wrap in a comment
		text = strings.ReplaceAll(text, repoBlob, "")                          // a link into the repository names the page it installs
		for _, m := range regexp.MustCompile(`[A-Za-z0-9_./-]+\.md\b`).FindAllString(text, -1) {
			m = strings.TrimPrefix(strings.TrimPrefix(m, "/usr/share/doc/evspool/"), "../") // nfpm.yaml's src and dst
			if m == "bench/README.md" && f == "Makefile" {
				continue // the Makefile is not shipped; bench/ is the repository's
			}
			assert.True(t, installed[m], "%s refers to %s, which the package does not install", f, m)
		}
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			refs++
			page, section := m[1], m[2]
			if !assert.True(t, installed[page], "%s refers to %s, which the package does not install", f, page) {
				continue
			}
			assert.True(t, headingAnchors(readDoc(t, page))[slug(section)], "%s refers to %s, section %q, which %s does not have", f, page, section, page)
		}
	}
	require.GreaterOrEqual(t, refs, 5, "references found in the shipped files")
}

// The defaults column of docs/operations.md's flag tables is each flag's
// real default; a flag without a value by default ("") is described in
// words (required, off, none).
func TestDocsFlagDefaults(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/operations.md")
	rows := 0
	var cmds []string
	heading := regexp.MustCompile("^### (.*) flags$")
	row := regexp.MustCompile("^\\| `--([a-z0-9-]+)[^`]*` \\| ([^|]*) \\|")
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
		m := row.FindStringSubmatch(line)
		if m == nil || len(cmds) == 0 {
			continue
		}
		rows++
		for _, c := range cmds {
			fs, _ := commandFlagSet(c)
			f := fs.Lookup(m[1])
			if !assert.NotNil(t, f, "evspool %s --%s", c, m[1]) {
				continue
			}
			doc := strings.Trim(strings.TrimSpace(m[2]), "`")
			if f.DefValue == "" {
				assert.Regexp(t, `^[a-z][a-z ]*$`, doc, "evspool %s --%s has no default value: the table says so in words", c, m[1])
			} else {
				assert.Equal(t, f.DefValue, doc, "docs/operations.md's default of evspool %s --%s", c, m[1])
			}
		}
	}
	require.Greater(t, rows, 20)
}

// The CLI's flags that set an emitter option default to the option's own
// default, so the flag table, --help and go doc state one figure.
func TestFlagDefaultsAreTheLibrarys(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var rf runFlags
	rf.register(fs)
	size := func(name string) int64 {
		n, err := units.ParseSize(fs.Lookup(name).DefValue)
		require.NoError(t, err, name)
		return n
	}
	dur := func(name string) time.Duration {
		d, err := units.ParseDuration(fs.Lookup(name).DefValue)
		require.NoError(t, err, name)
		return d
	}
	assert.EqualValues(t, emitter.DefaultMaxEventSize, size("max-event-size"))
	assert.EqualValues(t, wal.DefaultMaxBytes, size("max-spool-size"))
	assert.Equal(t, emitter.DefaultDialTimeout, dur("dial-timeout"))
	assert.Equal(t, emitter.DefaultWriteTimeout, dur("write-timeout"))
	assert.Equal(t, emitter.DefaultReplayLinger, dur("replay-linger"))
	assert.Equal(t, strconv.Itoa(emitter.DefaultMaxAttempts), fs.Lookup("max-attempts").DefValue)
	assert.Equal(t, emitter.DefaultNetwork, fs.Lookup("network").DefValue)
}

// exitConstants reads main.go's exit* constants: value and the first word
// of their comment.
func exitConstants(t *testing.T) map[int]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments)
	require.NoError(t, err)
	out := map[int]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "exit") || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || vs.Comment == nil {
			return true
		}
		v, err := strconv.Atoi(lit.Value)
		require.NoError(t, err)
		out[v] = strings.ToLower(strings.Fields(vs.Comment.Text())[0])
		return true
	})
	require.Len(t, out, 6, "exitOK, exitFatal, exitUsage, exitSpooled, exitLost, exitUnproven")
	return out
}

// Every exit-status table in the docs lists exactly the CLI's exit
// statuses, each meaning starting as the constant's comment does.
func TestDocsExitStatuses(t *testing.T) {
	t.Parallel()
	codes := exitConstants(t)
	tables := 0
	for _, name := range docFiles {
		var inTable bool
		got := map[int]bool{}
		for _, line := range strings.Split(readDoc(t, name)+"\n", "\n") {
			if strings.HasPrefix(line, "| exit |") {
				inTable, got = true, map[int]bool{}
				continue
			}
			if !inTable {
				continue
			}
			if !strings.HasPrefix(line, "|") {
				inTable = false
				tables++
				for c := range codes {
					assert.True(t, got[c], "%s: the exit-status table leaves out %d", name, c)
				}
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			c, err := strconv.Atoi(strings.TrimSpace(cells[0]))
			if err != nil {
				continue // the |---| row
			}
			got[c] = true
			word, ok := codes[c]
			if assert.True(t, ok, "%s: exit status %d is not one the CLI has", name, c) {
				meaning := strings.ToLower(strings.TrimSpace(cells[1]))
				assert.True(t, strings.HasPrefix(meaning, word), "%s: exit %d is %q in the code (main.go), %q here", name, c, word, meaning)
			}
		}
	}
	require.GreaterOrEqual(t, tables, 1)
}

// goModules are the go directives of every go.mod in the repository, by
// directory ("" for the root).
func goModules(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "go.mod", "*/go.mod").Output()
	require.NoError(t, err)
	mods := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readDoc(t, f))
		require.NotNil(t, m, f)
		dir := filepath.Dir(f)
		if dir == "." {
			dir = ""
		}
		mods[dir] = m[1]
	}
	require.Contains(t, mods, "")
	require.GreaterOrEqual(t, len(mods), 4, "root, bench, deploy, packaging")
	return mods
}

// makeModules returns the module directories a make target works in: its
// recipe's `cd DIR` lines, plain go commands (the root) and its
// prerequisites'.
func makeModules(t *testing.T, target string, mods map[string]string) map[string]bool {
	t.Helper()
	mk := readDoc(t, "Makefile")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:([^\n]*)\n((?:\t[^\n]*\n)*)`).FindStringSubmatch(mk)
	require.NotNil(t, m, "make %s", target)
	out := map[string]bool{}
	for _, dep := range strings.Fields(m[1]) {
		for d := range makeModules(t, dep, mods) {
			out[d] = true
		}
	}
	for _, line := range strings.Split(m[2], "\n") {
		if c := regexp.MustCompile(`cd (\S+) &&`).FindStringSubmatch(line); c != nil {
			_, ok := mods[c[1]]
			require.True(t, ok, "make %s: %s has a go.mod", target, c[1])
			out[c[1]] = true
		} else if strings.Contains(line, "$(GO)") {
			out[""] = true
		}
	}
	return out
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// A "Go 1.N" in a page is one of the go.mod files' versions, and a
// sentence that says which Go some make targets need gives at least the
// highest go directive among the modules those targets build.
func TestDocsGoVersions(t *testing.T) {
	t.Parallel()
	mods := goModules(t)
	known := map[string]bool{}
	for _, v := range mods {
		known[v] = true
		known[strings.TrimSuffix(v, ".0")] = true
	}
	goVer := regexp.MustCompile(`\bGo (1\.\d+(?:\.\d+)?)`)
	claims := 0
	for _, name := range docFiles {
		for _, para := range strings.Split(readDoc(t, name), "\n\n") {
			para = strings.Join(strings.Fields(para), " ")
			for _, sentence := range regexp.MustCompile(`[.;:] `).Split(para, -1) {
				vs := goVer.FindAllStringSubmatch(sentence, -1)
				for _, v := range vs {
					assert.True(t, known[v[1]], "%s: Go %s is no go.mod's version (%v): %q", name, v[1], mods, sentence)
				}
				targets := regexp.MustCompile("`make ([a-z-]+)`").FindAllStringSubmatch(sentence, -1)
				if len(vs) != 1 || len(targets) == 0 {
					continue
				}
				claims++
				for _, tg := range targets {
					for dir := range makeModules(t, tg[1], mods) {
						assert.False(t, versionLess(vs[0][1], mods[dir]), "%s says make %s needs Go %s, but %s/go.mod says go %s: %q",
							name, tg[1], vs[0][1], dir, mods[dir], sentence)
					}
				}
			}
		}
	}
	require.GreaterOrEqual(t, claims, 2, "the README says which Go each make target needs")
}

// snippetFreeNames are what a doc's Go snippet may use without declaring:
// the daemon's own values.
const snippetWrapper = `package docsnippets

import (
	"context"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
%s)

var (
	_ = io.Discard
	_ = http.Handle
)

func snippet(ctx context.Context, logger *slog.Logger, line, addr, dir string, registry *prometheus.Registry) error {
	_, _, _, _, _, _ = ctx, logger, line, addr, dir, registry
%s
	return nil
}
`

// goSnippets returns the ```go blocks of a page.
func goSnippets(doc string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case line == "```go":
			in, cur = true, nil
		case in && line == "```":
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// Every Go snippet in the README and docs/ compiles against the module as
// it is: its import lines (the README's names the import path) at the top
// of a file, its statements in a function given the daemon's ctx, logger,
// line, addr, dir and registry. Built with go build -overlay, so nothing
// is written into the tree.
func TestDocsGoSnippetsCompile(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	tmp := t.TempDir()
	overlay := map[string]string{}
	n := 0
	importLine := regexp.MustCompile(`^import\s+("[^"]+")`)
	for _, name := range []string{"README.md", "docs/daemon.md"} {
		for i, s := range goSnippets(readDoc(t, name)) {
			var imports, body []string
			for _, line := range strings.Split(s, "\n") {
				if m := importLine.FindStringSubmatch(line); m != nil {
					imports = append(imports, "\t"+m[1]+"\n")
					continue
				}
				body = append(body, "\t"+line)
			}
			src := fmt.Sprintf("// %s, Go snippet %d\n", name, i+1) + fmt.Sprintf(snippetWrapper, strings.Join(imports, ""), strings.Join(body, "\n"))
			file := filepath.Join(tmp, fmt.Sprintf("s%d.go", n))
			require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
			// One package per snippet: each declares em and err.
			overlay[filepath.Join(root, "internal", "docsnippets", fmt.Sprintf("s%d", n), "s.go")] = file
			n++
		}
	}
	require.GreaterOrEqual(t, n, 2)
	readme := strings.Join(goSnippets(readDoc(t, "README.md")), "\n")
	require.Contains(t, readme, `import "github.com/evspool/evspool/emitter"`, "the README's snippet names its import path")
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	ovFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ovFile, ov, 0o644))
	cmd := exec.Command("go", "build", "-overlay", ovFile, "./internal/docsnippets/...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "a Go snippet in the docs does not compile:\n%s", out)
}

// The checks above catch what they are for.
func TestDocsTruthChecksCatch(t *testing.T) {
	t.Parallel()
	require.Equal(t, "run-and-exec-flags", slug("`run` and `exec` flags"))
	require.Equal(t, "the-replay-window", slug("The replay window"))
	require.True(t, headingAnchors("# A\n```\n# not a heading\n```\n## How it works\n")["how-it-works"])
	require.False(t, headingAnchors("```\n# not a heading\n```\n")["not-a-heading"])
	require.Equal(t, "see  and [b](c)", stripCode("see `[a](b)` and [b](c)\n```\n[x](y)\n```"))
	m := docRef.FindStringSubmatch(`See docs/operations.md, "Deployment".`)
	require.Equal(t, []string{"docs/operations.md", "Deployment"}, m[1:])
	m = docRef.FindStringSubmatch(`"description": "See docs/operations.md, \"Alerts and dashboard\"."`)
	require.Equal(t, []string{"docs/operations.md", "Alerts and dashboard"}, m[1:])
	require.True(t, versionLess("1.24.0", "1.26.8"))
	require.False(t, versionLess("1.26.8", "1.24.0"))
	require.False(t, versionLess("1.24", "1.24.0"))
	mods := goModules(t)
	require.Equal(t, map[string]bool{"": true, "bench": true}, makeModules(t, "test", mods))
	require.Equal(t, map[string]bool{"": true}, makeModules(t, "demo", mods))
	require.Equal(t, map[string]bool{"packaging": true}, makeModules(t, "image", mods))
	require.Len(t, goSnippets("x\n```go\na := 1\n```\n```sh\nls\n```\n"), 1)
}

// troubleshooting is the page the alerts' runbook_urls point into.
const troubleshooting = "docs/troubleshooting.md"

// repoBlob is the address of the repository's files; runbookBase that of
// troubleshooting, where Alertmanager's links go.
const (
	repoBlob    = "https://github.com/evspool/evspool/blob/main/"
	runbookBase = repoBlob + troubleshooting
)

// Every alert of deploy/alerts.yaml has a runbook_url that resolves to a
// section of docs/troubleshooting.md, its own: a heading with the alert's
// name.
func TestRunbooksResolve(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(deployDir, "alerts.yaml"))
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	anchors := headingAnchors(readDoc(t, troubleshooting))
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			page, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "#")
			require.True(t, ok, "alert %s: runbook_url %q names no section", r.Alert, r.Annotations["runbook_url"])
			assert.Equal(t, runbookBase, page, "alert %s: runbook_url into %s", r.Alert, troubleshooting)
			assert.True(t, anchors[anchor], "alert %s: %s has no section #%s", r.Alert, troubleshooting, anchor)
			assert.Equal(t, slug(r.Alert), anchor, "alert %s: its runbook is the section named after it", r.Alert)
		}
	}
	require.GreaterOrEqual(t, n, 12, "alerts found")
	require.True(t, installedDocs(t)[troubleshooting], "the package installs %s", troubleshooting)
}

// logSources are the directories whose warnings and errors an operator
// sees (the CLI, the library, the sink's receiver).
var logSources = []string{"emitter", "wal", "cmd/evspool", "internal/refrecv"}

// Every warning and error evspool logs (a Warn or Error call, or a
// rate-limited reporter's warn, with a literal message) is on
// docs/troubleshooting.md, up to the first formatted figure.
func TestTroubleshootingListsEveryLogLine(t *testing.T) {
	t.Parallel()
	page := strings.Join(strings.Fields(readDoc(t, troubleshooting)), " ")
	msgs := logLineMessages(t)
	require.Greater(t, len(msgs), 40, "log lines found")
	for msg, where := range msgs {
		assert.True(t, strings.Contains(page, "`"+msg), "%s logs %q: %s does not list it", where, msg, troubleshooting)
	}
}

// logLineMessages returns the literal messages of Warn and Error calls (and
// reporter warn calls) in logSources' non-test files, each cut at its
// first verb when it is a format, with where it is.
func logLineMessages(t *testing.T) map[string]string {
	t.Helper()
	msgs := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range logSources {
		files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				arg := -1
				switch sel.Sel.Name {
				case "Warn", "Error":
					arg = 0
				case "warn":
					arg = 1
				}
				if arg < 0 || len(call.Args) <= arg {
					return true
				}
				if msg, ok := literalMessage(call.Args[arg]); ok {
					msgs[msg] = fset.Position(call.Pos()).String()
				}
				return true
			})
		}
	}
	return msgs
}

// literalMessage is e's text if it is a string literal or fmt.Sprintf of
// one, cut before its first verb.
func literalMessage(e ast.Expr) (string, bool) {
	if c, ok := e.(*ast.CallExpr); ok {
		if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(c.Args) > 0 {
			e = c.Args[0]
		}
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return "", false
	}
	s, _, _ = strings.Cut(s, "%")
	return strings.TrimSpace(s), true
}

// outsideLinks are the links of installed pages that still point at a page
// the package does not install, each to be made a repository address; none
// may be added.
var outsideLinks = map[string]bool{
	"docs/delivery.md -> ../bench/README.md": true,
	"docs/spool.md -> ../bench/README.md":    true,
}

// The pages the package installs link only to pages it installs, so that
// a link followed on the node finds its page; a page of the repository
// alone (the bench's) is linked by its repository address.
func TestInstalledDocsLinkInstalledPages(t *testing.T) {
	t.Parallel()
	installed := installedDocs(t)
	checked := 0
	for page := range installed {
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(readDoc(t, page)), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file := filepath.ToSlash(filepath.Join(filepath.Dir(page), target))
			if !installed[file] && !outsideLinks[page+" -> "+target] {
				t.Errorf("%s links to %s, which the package does not install: link %s%s instead", page, target, repoBlob, file)
			}
		}
	}
	require.Greater(t, checked, 20)
}
