package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
	"github.com/stretchr/testify/require"
)

const testVersion = "1.2.3~test"

// debArch is dpkg's name of GOARCH for the architectures evspool targets.
var debArch = map[string]string{"amd64": "amd64", "arm64": "arm64", "386": "i386", "arm": "armhf"}[runtime.GOARCH]

// The .deb and .rpm are built as make package builds them; the .deb is
// inspected with dpkg-deb, extracted to a temporary root, its binary run and
// its units put through systemd-analyze verify.
func TestPackage(t *testing.T) {
	out := t.TempDir()
	pkgs, err := build(options{version: testVersion, arch: runtime.GOARCH, out: out})
	require.NoError(t, err)
	require.Len(t, pkgs, 2)
	deb, rpm := pkgs[0].path, pkgs[1].path
	require.Equal(t, "evspool_"+testVersion+"-1_"+debArch+".deb", filepath.Base(deb))
	require.True(t, strings.HasPrefix(filepath.Base(rpm), "evspool-"+testVersion+"-1.") && strings.HasSuffix(rpm, ".rpm"), rpm)
	checkRPM(t, rpm)
	lintian(t, deb)

	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not found (Debian and Ubuntu have it): the .deb was built, not inspected")
	}
	checkControl(t, deb)
	checkFileList(t, deb)
	root := t.TempDir()
	run(t, "dpkg-deb", "-x", deb, root)
	checkBinary(t, root)
	checkManPage(t, root)
	checkUnits(t, root)
}

// checkRPM reads the .rpm's header with a Go RPM reader (no rpm tool
// needed): name, version, the files and their modes, the conffile flags.
func checkRPM(t *testing.T, path string) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	require.NoError(t, err)
	nevra, err := r.Header.GetNEVRA()
	require.NoError(t, err)
	require.Equal(t, "evspool", nevra.Name)
	require.Equal(t, testVersion, nevra.Version)
	require.Equal(t, "1", nevra.Release)
	files, err := r.Header.GetFiles()
	require.NoError(t, err)
	got := map[string]rpmutils.FileInfo{}
	for _, fi := range files {
		got[fi.Name()] = fi
	}
	for path, mode := range map[string]int{"/usr/bin/evspool": 0o755, "/usr/lib/systemd/system/evspool.service": 0o644,
		"/usr/lib/systemd/system/evspool-ptp4l.service": 0o644, "/etc/sysconfig/evspool": 0o644,
		"/usr/share/man/man1/evspool.1.gz": 0o644, "/usr/share/evspool/alerts.yaml": 0o644, "/usr/share/licenses/evspool/LICENSE": 0o644} {
		require.Contains(t, got, path)
		require.Equal(t, mode, got[path].Mode()&0o7777, path)
	}
	require.NotContains(t, got, "/etc/default/evspool", "rpm distributions keep settings in /etc/sysconfig")
	require.Equal(t, rpmutils.RPMFILE_CONFIG|rpmutils.RPMFILE_NOREPLACE, got["/etc/sysconfig/evspool"].Flags(),
		"%config(noreplace): an upgrade keeps the operator's edits")
	require.Equal(t, rpmutils.RPMFILE_LICENSE, got["/usr/share/licenses/evspool/LICENSE"].Flags(), "%license")
	license, err := r.Header.GetString(rpmutils.LICENSE)
	require.NoError(t, err)
	require.Equal(t, licenseID, license, "the rpm's License: tag")
	unit := rpmFile(t, path, "/usr/lib/systemd/system/evspool.service")
	require.Contains(t, unit, "\nEnvironmentFile=/etc/sysconfig/evspool\n", "the rpm's unit reads the rpm's settings")
	require.NotContains(t, unit, debSettings)
	post, err := r.Header.GetString(rpmutils.POSTIN)
	require.NoError(t, err)
	require.Contains(t, post, "try-restart", "an upgrade restarts the service")
	t.Logf("rpm License: %s", license)
	t.Logf("rpm %s: %d files", nevra, len(files))
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

func checkControl(t *testing.T, deb string) {
	info := run(t, "dpkg-deb", "-I", deb)
	t.Logf("dpkg-deb -I:\n%s", info)
	for _, field := range []string{"Package: evspool", "Version: " + testVersion + "-1", "Architecture: " + debArch, "Section: admin"} {
		require.Contains(t, info, "\n "+field+"\n")
	}
	require.Contains(t, run(t, "dpkg-deb", "-I", deb, "postinst"), "try-restart", "an upgrade restarts the service")
	require.Equal(t, "/etc/default/evspool\n", run(t, "dpkg-deb", "-I", deb, "conffiles"),
		"the settings are a conffile: an upgrade keeps the operator's edits")
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		require.Contains(t, run(t, "dpkg-deb", "-I", deb, script), "systemctl")
	}
}

func checkFileList(t *testing.T, deb string) {
	list := run(t, "dpkg-deb", "-c", deb)
	t.Logf("dpkg-deb -c:\n%s", list)
	files := map[string]string{} // path: mode and owner
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 6, line)
		files[strings.TrimPrefix(f[5], ".")] = f[0] + " " + f[1]
	}
	want := map[string]string{
		"/usr/bin/evspool":                                    "-rwxr-xr-x root/root",
		"/usr/lib/systemd/system/evspool.service":             "-rw-r--r-- root/root",
		"/etc/default/evspool":                                "-rw-r--r-- root/root",
		"/usr/share/man/man1/evspool.1.gz":                    "-rw-r--r-- root/root",
		"/usr/share/evspool/alerts.yaml":                      "-rw-r--r-- root/root",
		"/usr/share/evspool/prometheusrule.yaml":              "-rw-r--r-- root/root",
		"/usr/share/evspool/dashboard.json":                   "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/README.md":                    "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/docs/operations.md":           "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/docs/delivery.md":             "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/docs/daemon.md":               "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/docs/spool.md":                "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/docs/troubleshooting.md":      "-rw-r--r-- root/root",
		"/usr/lib/systemd/system/evspool-ptp4l.service":       "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/copyright":                    "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/changelog.Debian.gz":          "-rw-r--r-- 0/0", // nfpm writes it with numeric owners: root too
		"/usr/share/lintian/overrides/evspool":                "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/examples/kubernetes.yaml":     "-rw-r--r-- root/root",
		"/usr/share/doc/evspool/examples/servicemonitor.yaml": "-rw-r--r-- root/root",
	}
	for path, mode := range want {
		require.Equal(t, mode, files[path], path)
	}
	require.NotContains(t, files, "/etc/sysconfig/evspool", "the rpm's settings file")
}

func checkBinary(t *testing.T, root string) {
	bin := filepath.Join(root, "usr/bin/evspool")
	require.Equal(t, "evspool "+testVersion+" ("+runtime.Version()+")\n", run(t, bin, "--version"))
	require.Contains(t, run(t, bin, "exec", "--help"), "Usage: evspool exec")
}

func checkManPage(t *testing.T, root string) {
	f, err := os.Open(filepath.Join(root, "usr/share/man/man1/evspool.1.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	page, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(page, []byte(".TH EVSPOOL 1 ")), "a man page")
	for _, c := range manCommands {
		require.Contains(t, string(page), ".SS evspool "+c+"\n")
	}
	require.Contains(t, string(page), "Usage: evspool exec [run flags] -- COMMAND [ARG...]", "made from --help")
	if _, err := exec.LookPath("groff"); err != nil {
		t.Log("groff not found: the man page was not rendered")
		return
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err)
	require.Empty(t, string(out), "groff warnings")
}

func checkUnits(t *testing.T, root string) {
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/evspool.service"))
	require.NoError(t, err)
	for _, line := range []string{"Type=notify", "WatchdogSec=30s", "NotifyAccess=main", "StateDirectory=evspool",
		"EnvironmentFile=/etc/default/evspool", "ExecStart=/usr/bin/evspool exec $EVSPOOL_OPTS -- $EVSPOOL_COMMAND"} {
		require.Contains(t, string(unit), "\n"+line+"\n")
	}
	verify(t, root)
}

// rpmFile returns the content of the file at name in the .rpm at path.
func rpmFile(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	require.NoError(t, err)
	pr, err := r.PayloadReaderExtended()
	require.NoError(t, err)
	for {
		fi, err := pr.Next()
		require.NoError(t, err, "%s not in %s", name, path)
		if fi.Name() == name {
			body, err := io.ReadAll(pr)
			require.NoError(t, err)
			return string(body)
		}
	}
}

// lintian finds no error in the .deb (warnings are logged). Without
// lintian (apt-get install lintian) the check is skipped, saying so.
func lintian(t *testing.T, deb string) {
	t.Helper()
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Log("lintian not found: the .deb was not linted (apt-get install lintian)")
		return
	}
	out, _ := exec.Command("lintian", "--tag-display-limit", "0", deb).CombinedOutput()
	t.Logf("lintian %s:\n%s", filepath.Base(deb), out)
	for _, line := range strings.Split(string(out), "\n") {
		require.False(t, strings.HasPrefix(line, "E: "), "lintian error: %s", line)
	}
}
