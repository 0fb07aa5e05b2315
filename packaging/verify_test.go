package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// verify runs systemd-analyze verify on the packaged units inside root (the
// extracted package): each directive known, ExecStart's binary there and
// executable, the Documentation= man page found. A warning fails the test,
// not only an error. A unit with a typo is checked too, so that a verify
// that cannot fail would be noticed.
func verify(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not found: the packaged units were not verified (apt-get install systemd)")
		return
	}
	units := filepath.Join(root, "usr/lib/systemd/system")
	linkHostUnits(t, units) // the targets the units name (multi-user.target, ...)
	example := filepath.Join(units, "evspool-ptp4l.service")
	raw, err := os.ReadFile(example)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755))

	out, err := analyze(root, filepath.Join(units, "evspool.service"), example)
	require.NoError(t, err, out)
	require.Empty(t, out, "systemd-analyze verify says something about the packaged units")
	t.Logf("systemd-analyze verify --root=%s evspool.service evspool-ptp4l.service: no output, exit 0", root)

	broken := filepath.Join(root, "etc/systemd/system/broken.service")
	require.NoError(t, os.WriteFile(broken, []byte(strings.Replace(string(raw), "WatchdogSec=", "WatchdogSecs=", 1)), 0o644))
	out, _ = analyze(root, broken)
	require.Contains(t, out, "Unknown key 'WatchdogSecs'", "verify notices a typo")

	// The sandbox: evspool.service scores maxExposure or lower, the ptp4l
	// unit, which must grant what ptp4l needs, maxPTPExposure. A unit
	// with the sandbox taken out scores above the bar, so that a check that
	// cannot fail would be noticed.
	score := security(t, root, filepath.Join(units, "evspool.service"))
	t.Logf("systemd-analyze security --offline=yes evspool.service: %.1f", score)
	require.LessOrEqual(t, score, maxExposure, "evspool.service's sandbox: systemd-analyze security --offline=yes packaging/evspool.service")
	ptp := security(t, root, example)
	t.Logf("systemd-analyze security --offline=yes evspool-ptp4l.service: %.1f", ptp)
	require.LessOrEqual(t, ptp, maxPTPExposure, "evspool-ptp4l.service's sandbox: systemd-analyze security --offline=yes deploy/evspool-ptp4l.service")
	unit, err := os.ReadFile(filepath.Join(units, "evspool.service"))
	require.NoError(t, err)
	bare := filepath.Join(root, "etc/systemd/system/bare.service")
	cut, _, _ := strings.Cut(string(unit), "NoNewPrivileges=")
	require.NoError(t, os.WriteFile(bare, []byte(cut+"\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
	require.Greater(t, security(t, root, bare), maxExposure, "without its sandbox the unit fails the bar")
}

// maxExposure is the highest systemd-analyze security score (0 to 10,
// lower is safer) evspool.service may have; maxPTPExposure the ptp4l
// unit's, which grants ptp4l's capabilities, devices and /run.
const (
	maxExposure    = 2.0
	maxPTPExposure = 3.5
)

// security returns systemd-analyze security's overall exposure of unit.
func security(t *testing.T, root, unit string) float64 {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--root="+root, unit).CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	require.NotNil(t, m, "no overall exposure in:\n%s", out)
	score, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return score
}

func analyze(root string, units ...string) (string, error) {
	cmd := exec.Command("systemd-analyze", append([]string{"verify", "--root=" + root}, units...)...)
	// Documentation=man:evspool(1) is looked up with man(1): in the package.
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr/share/man"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// linkHostUnits copies the host's unit files (not the package's) into dir.
func linkHostUnits(t *testing.T, dir string) {
	t.Helper()
	host, err := os.ReadDir("/usr/lib/systemd/system")
	if err != nil {
		t.Skipf("no /usr/lib/systemd/system on this machine: cannot verify units (%v)", err)
	}
	for _, e := range host {
		dst := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() {
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/usr/lib/systemd/system", e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, raw, 0o644))
	}
}
