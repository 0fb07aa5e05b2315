package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/evspool/evspool/wal"
)

// The deployment examples under deploy/ are parsed and every evspool command
// line in them goes through the CLI's own flag parsing and validation, so a
// renamed flag or a bad value breaks this test, not a user's rollout.

const deployDir = "../../deploy"

// parseEvspool checks one evspool command line (without the binary) as run
// or exec would, and returns its flags.
func parseEvspool(t *testing.T, where string, args []string) *runFlags {
	t.Helper()
	require.NotEmpty(t, args, where)
	require.Contains(t, []string{"run", "exec"}, args[0], "%s: evspool %s", where, args[0])
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var rf runFlags
	rf.register(fs)
	require.NoError(t, fs.Parse(args[1:]), "%s: %q", where, args)
	require.NoError(t, rf.validate(), "%s: %q", where, args)
	if args[0] == "exec" {
		require.NotEmpty(t, fs.Args(), "%s: exec needs a COMMAND after --", where)
	} else {
		require.Empty(t, fs.Args(), where)
	}
	return &rf
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Host string `yaml:"host"`
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sDaemonSet struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
				Volumes    []struct {
					Name     string    `yaml:"name"`
					EmptyDir *struct{} `yaml:"emptyDir"`
					HostPath *struct {
						Path string `yaml:"path"`
					} `yaml:"hostPath"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func TestDeployKubernetes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(deployDir, "kubernetes.yaml"))
	require.NoError(t, err)
	var ds k8sDaemonSet
	require.NoError(t, decodeKind(raw, "DaemonSet", &ds))
	pod := ds.Spec.Template.Spec
	volumes := map[string]bool{} // name: emptyDir or hostPath
	for _, v := range pod.Volumes {
		volumes[v.Name] = v.EmptyDir != nil || v.HostPath != nil
	}

	found := 0
	for _, c := range pod.Containers {
		cmd := append(append([]string(nil), c.Command...), c.Args...)
		if len(cmd) == 0 || filepath.Base(cmd[0]) != "evspool" {
			continue
		}
		found++
		where := "kubernetes.yaml container " + c.Name
		require.Equal(t, "exec", cmd[1], "%s: evspool is the entrypoint through exec", where)
		rf := parseEvspool(t, where, cmd[1:])

		// The spool is a subdirectory of an emptyDir or hostPath mount.
		var spoolMount string
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(rf.spool, strings.TrimSuffix(m.MountPath, "/")+"/") {
				require.True(t, volumes[m.Name], "%s: volume %s is an emptyDir or a hostPath", where, m.Name)
				spoolMount = m.MountPath
			}
			require.NotEqual(t, filepath.Clean(m.MountPath), filepath.Clean(rf.spool),
				"%s: --spool is the mount itself (0777 on an emptyDir, refused): use a subdirectory", where)
		}
		require.NotEmpty(t, spoolMount, "%s: --spool %s is under no volume mount", where, rf.spool)

		// The probes hit the metrics port on /healthz and /readyz, on
		// localhost: with hostNetwork, any other address is the node's.
		require.NotEmpty(t, rf.metricsAddr, "%s: --metrics-addr serves the probes", where)
		host, port, err := net.SplitHostPort(rf.metricsAddr)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host, "%s: --metrics-addr on localhost only", where)
		var portName string
		var portNum int
		for _, p := range c.Ports {
			if p.ContainerPort > 0 && port == strconv.Itoa(p.ContainerPort) {
				portName, portNum = p.Name, p.ContainerPort
			}
		}
		require.NotZero(t, portNum, "%s: the metrics port %s is declared", where, port)
		for path, pr := range map[string]*k8sProbe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
			require.NotNil(t, pr, "%s: probe for %s", where, path)
			require.NotNil(t, pr.HTTPGet, where)
			require.Equal(t, path, pr.HTTPGet.Path, where)
			require.Contains(t, []any{portName, portNum}, pr.HTTPGet.Port, "%s: the probe of %s is on the metrics port", where, path)
			require.Equal(t, host, pr.HTTPGet.Host, "%s: the probe of %s goes to the address evspool listens on", where, path)
		}
		probeManifest(t, where, cmd[1:], host, map[string]*k8sProbe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe})
	}
	require.Equal(t, 1, found, "one evspool container")
}

// decodeKind decodes into out the document of a multi-document manifest
// whose kind is kind.
func decodeKind(manifest []byte, kind string, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return fmt.Errorf("no %s in the manifest: %w", kind, err)
		}
		var tm struct {
			Kind string `yaml:"kind"`
		}
		if err := doc.Decode(&tm); err != nil {
			return err
		}
		if tm.Kind == kind {
			return doc.Decode(out)
		}
	}
}

// probeManifest runs evspool with the manifest's flags (run for exec, its
// socket and spool in a temporary directory, the metrics port 0, since
// 9477 may be taken here, text logs) and probes it as the kubelet would: each probe's
// host, port and path answer 200, and the metrics address is reachable on
// 127.0.0.1 and on no other address of this machine.
func probeManifest(t *testing.T, where string, args []string, host string, probes map[string]*k8sProbe) {
	t.Helper()
	sock, spool := paths(t)
	startSink(t, sock)
	var flags []string
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		switch {
		case strings.HasPrefix(a, "--socket="):
			a = "--socket=" + sock
		case strings.HasPrefix(a, "--spool="):
			a = "--spool=" + spool
		case strings.HasPrefix(a, "--metrics-addr="):
			a = "--metrics-addr=" + host + ":0"
		case strings.HasPrefix(a, "--log-format="):
			a = "--log-format=text" // what waitMetricsAddr reads
		}
		flags = append(flags, a)
	}
	p := start(t, append([]string{"run"}, flags...)...)
	addr := waitMetricsAddr(t, p)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	require.Equal(t, net.JoinHostPort(host, port), addr, "%s: serves on the manifest's host", where)
	for path, pr := range probes {
		url := "http://" + net.JoinHostPort(pr.HTTPGet.Host, port) + pr.HTTPGet.Path
		require.Eventually(t, func() bool {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 5*time.Second, 10*time.Millisecond, "%s: probe %s", where, path)
	}
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	others := 0
	for _, a := range addrs {
		ip, _, err := net.ParseCIDR(a.String())
		if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		others++
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), port), time.Second)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "%s: metrics reachable on %s, a node address", where, ip)
	}
	t.Logf("%s: probes answered on %s; refused on %d other address(es) of this machine", where, addr, others)
	require.NoError(t, p.stdin.Close())
	p.wait(t, 10*time.Second)
}

func TestDeploySystemd(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		unit, envFile string
		preamble      []string
	}{
		"example for ptp4l": {unit: filepath.Join(deployDir, "evspool-ptp4l.service"), preamble: []string{"CMD LIVE_START"}},
		"packaged":          {unit: "../../packaging/evspool.service", envFile: "../../packaging/evspool.default"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			unit := readUnit(t, tc.unit)
			var env map[string]string
			if tc.envFile != "" {
				require.Equal(t, "/etc/default/evspool", unit["EnvironmentFile"], "the packaged settings file")
				env = readEnvFile(t, tc.envFile)
				// Shipped empty: evspool exits 2 ("no COMMAND given") and the
				// unit does not restart a usage error. The operator sets it.
				require.Empty(t, env["EVSPOOL_COMMAND"], "no daemon is guessed for the operator")
				require.Contains(t, strings.Fields(unit["RestartPreventExitStatus"]), "2", "a usage error is not restarted")
				env["EVSPOOL_COMMAND"] = "/usr/sbin/ptp4l -f /etc/ptp4l.conf -m"
			}
			require.Equal(t, "notify", unit["Type"], "READY=1 once the spool is open (notify.go)")
			require.Equal(t, "main", unit["NotifyAccess"])
			require.NotEmpty(t, unit["WatchdogSec"], "a wedged drainer is restarted")
			words, err := splitWords(unit["ExecStart"])
			require.NoError(t, err)
			words = expandEnv(t, words, env)
			require.Equal(t, "/usr/bin/evspool", words[0], "where the package installs it")
			rf := parseEvspool(t, tc.unit, words[1:])
			require.Equal(t, tc.preamble, rf.preamble, "a quoted value is one argument")
			stateDir := "/var/lib/" + unit["StateDirectory"]
			require.True(t, strings.HasPrefix(rf.spool, stateDir+"/"), "--spool %s is a subdirectory of StateDirectory %s", rf.spool, stateDir)
		})
	}
}

// readUnit returns a unit file's Key=value settings (the last of each).
func readUnit(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// readEnvFile reads an EnvironmentFile's KEY="value" lines.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// expandEnv does what systemd does with a word that is exactly $NAME in
// ExecStart=: it becomes the variable's value split at whitespace, zero or
// more words.
func expandEnv(t *testing.T, words []string, env map[string]string) []string {
	t.Helper()
	var out []string
	for _, w := range words {
		name, ok := strings.CutPrefix(w, "$")
		if !ok {
			out = append(out, w)
			continue
		}
		v, set := env[name]
		require.True(t, set, "$%s is not set in the EnvironmentFile", name)
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// splitWords splits a command line as systemd does for ExecStart= in the
// cases the examples use: words separated by spaces, double or single
// quotes around a word with spaces.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, io.ErrUnexpectedEOF
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// The README's advice for an emptyDir, checked: the mount (0777) is refused,
// a subdirectory evspool creates is 0700 and accepted.
func TestSpoolUnderEmptyDir(t *testing.T) {
	t.Parallel()
	mount := filepath.Join(t.TempDir(), "evspool")
	require.NoError(t, os.Mkdir(mount, 0o777))
	require.NoError(t, os.Chmod(mount, 0o777)) // as the kubelet leaves an emptyDir
	_, err := wal.Open(mount, nil)
	require.ErrorIs(t, err, wal.ErrUnsafeDir)
	require.ErrorContains(t, err, "chmod 700")
	require.ErrorContains(t, err, "give a subdirectory of it", "the error says what to do on an emptyDir")
	w, err := wal.Open(filepath.Join(mount, "spool"), nil)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	fi, err := os.Stat(filepath.Join(mount, "spool"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
