package deploy

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// kubernetes.yaml's DaemonSet decodes strictly into the Kubernetes API's
// own type (decodeManifest), and holds together as the API server
// requires: the selector matches the pod's labels, mounts name declared
// volumes, probes name declared ports. (cmd/evspool's deploy_test.go checks
// evspool's flags in it; servicemonitor_test.go the metrics proxy.)
func TestKubernetesManifest(t *testing.T) {
	ds := one[*appsv1.DaemonSet](t, decodeManifest(t, "kubernetes.yaml"))

	sel := ds.Spec.Selector
	require.NotNil(t, sel)
	require.True(t, labels.SelectorFromSet(sel.MatchLabels).Matches(labels.Set(ds.Spec.Template.Labels)),
		"the selector matches the pod template's labels")

	pod := ds.Spec.Template.Spec
	checkNodeDaemon(t, ds)
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		require.NotEmpty(t, c.Image, c.Name)
		checkContainer(t, c)
		for _, m := range c.VolumeMounts {
			require.True(t, volumes[m.Name], "container %s mounts undeclared volume %s", c.Name, m.Name)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if pr == nil || pr.HTTPGet == nil {
				continue
			}
			if name := pr.HTTPGet.Port.StrVal; name != "" {
				require.Contains(t, ports, name, "container %s: probe on undeclared port %s", c.Name, name)
			}
		}
	}
}

// checkNodeDaemon: the pod is a node daemon's, as the PTP operator's
// linuxptp-daemon: the node's network and pids, system-node-critical,
// every taint tolerated, one pod per node at a time through a rollout, and
// the spool on the node's disk.
func checkNodeDaemon(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	require.True(t, pod.HostNetwork, "hostNetwork, as linuxptp-daemon")
	require.True(t, pod.HostPID, "the host's pid namespace, as linuxptp-daemon shares it")
	require.Equal(t, "system-node-critical", pod.PriorityClassName)
	require.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, pod.Tolerations, "every taint tolerated")
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	require.NotNil(t, ru)
	require.NotNil(t, ru.MaxSurge)
	require.Zero(t, ru.MaxSurge.IntValue(), "no surge: two pods on a node would contend for one spool")
	hostPaths := 0
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths++
			require.Equal(t, "/var/lib/evspool", v.HostPath.Path)
			require.NotNil(t, v.HostPath.Type)
			require.Equal(t, corev1.HostPathDirectoryOrCreate, *v.HostPath.Type)
		}
	}
	require.Equal(t, 1, hostPaths, "the spool on a hostPath, the only one")
}

// checkContainer: a pinned image, requests and limits of CPU, memory and
// ephemeral storage (limits at least the requests), and no capability
// added (the ptp4l container is privileged, which grants them: see the
// manifest).
func checkContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	_, tag, ok := strings.Cut(c.Image[strings.LastIndex(c.Image, "/")+1:], ":")
	require.True(t, ok && tag != "" && tag != "latest", "container %s: image %s is pinned", c.Name, c.Image)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		require.False(t, req.IsZero(), "container %s: requests.%s", c.Name, r)
		require.False(t, lim.IsZero(), "container %s: limits.%s", c.Name, r)
		require.GreaterOrEqual(t, lim.Cmp(req), 0, "container %s: limits.%s under requests", c.Name, r)
	}
	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		require.Empty(t, sc.Capabilities.Add, "container %s adds capabilities", c.Name)
	}
}

// kube-score, when installed (go install github.com/zegl/kube-score/cmd/kube-score@v1.20.0),
// finds only what a PTP daemon's pod needs: the ptp4l container privileged
// and running as root (it opens /dev/ptpN and steers clocks), and no
// NetworkPolicy (none applies to a hostNetwork pod). The metrics proxy,
// its Service and RBAC add none. Without kube-score the check is skipped,
// saying so.
func TestKubeScore(t *testing.T) {
	if _, err := exec.LookPath("kube-score"); err != nil {
		t.Skip("kube-score not found: the manifest was not scored (go install github.com/zegl/kube-score/cmd/kube-score@v1.20.0)")
	}
	out, _ := exec.Command("kube-score", "score", "--output-format", "ci", "kubernetes.yaml").CombinedOutput()
	var findings []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "[OK]") && !strings.HasPrefix(line, "[SKIPPED]") {
			_, finding, _ := strings.Cut(line, ": ")
			findings = append(findings, strings.Fields(line)[0]+" "+finding)
		}
	}
	require.ElementsMatch(t, []string{
		"[CRITICAL] (ptp4l) The container is privileged",
		"[CRITICAL] (ptp4l) The container is running with a low user ID",
		"[CRITICAL] (ptp4l) The container running with a low group ID",
		"[CRITICAL] The pod does not have a matching NetworkPolicy",
	}, findings, "kube-score score --output-format ci deploy/kubernetes.yaml:\n%s", out)
	t.Logf("kube-score: %d findings, all of them the privileged ptp4l container's and the hostNetwork pod's", len(findings))
}
