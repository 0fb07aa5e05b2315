package layout_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const mod = "github.com/evspool/evspool"

// goList runs go list at the module's root and returns, for each package
// the patterns name, what the format prints, split into fields.
func goList(t *testing.T, format string, args ...string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the layout is read with go list")
	root, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	cmd := exec.Command(goTool, append([]string{"list", "-f", format}, args...)...)
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		require.NotEmpty(t, f)
		pkgs[f[0]] = f[1:]
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// ours returns the module's own packages among paths, relative to the module.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rel, ok := strings.CutPrefix(p, mod+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

func under(path string, dirs ...string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// Each package imports only packages below it: wal/clock nothing of the module,
// the spool and the library's internals nothing of the emitter or the CLI.
func TestImportsRunDownhill(t *testing.T) {
	t.Parallel()
	imports := goList(t, "{{.ImportPath}} {{join .Imports \" \"}}", "./wal/...", "./internal/...")
	for pkg, imp := range imports {
		rel := strings.TrimPrefix(pkg, mod+"/")
		for _, dep := range ours(imp) {
			switch {
			case under(rel, "wal/clock"):
				t.Errorf("%s imports %s: the clock is below everything", rel, dep)
			case under(dep, "emitter", "cmd", "bench"):
				t.Errorf("%s imports %s, which is above it", rel, dep)
			}
		}
	}
}

// What a daemon links (the emitter, the spool, the clock) reaches only the
// library's own internals: no reference receiver, checker or test kit.
func TestLibraryLinksOnlyItself(t *testing.T) {
	t.Parallel()
	deps := goList(t, "{{.ImportPath}} {{join .Deps \" \"}}", "./wal", "./emitter/...")
	for pkg, d := range deps {
		for _, dep := range ours(d) {
			if !under(dep, "wal", "emitter", "internal") || under(dep, "internal/testkit", "internal/refrecv", "internal/verify") {
				t.Errorf("%s links %s, which is not part of the library", pkg, dep)
			}
		}
	}
}

// The evspool binary links no part of the test kit.
func TestBinaryLinksNoTestKit(t *testing.T) {
	t.Parallel()
	deps := goList(t, "{{.ImportPath}} {{join .Deps \" \"}}", "./cmd/...")
	for pkg, d := range deps {
		for _, dep := range ours(d) {
			if under(dep, "internal/testkit") {
				t.Errorf("%s links %s, a test kit package", pkg, dep)
			}
		}
	}
}
