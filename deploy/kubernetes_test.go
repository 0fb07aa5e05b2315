package deploy

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// kubernetes.yaml decodes strictly into the Kubernetes API's own DaemonSet
// type (an unknown or misplaced field fails, as kubectl apply --validate
// would), and holds together as the API server requires: the selector
// matches the pod's labels, mounts name declared volumes, probes name
// declared ports. (cmd/evspool's deploy_test.go checks evspool's flags in it.)
func TestKubernetesManifest(t *testing.T) {
	raw, err := os.ReadFile("kubernetes.yaml")
	require.NoError(t, err)
	var ds appsv1.DaemonSet
	require.NoError(t, yaml.UnmarshalStrict(raw, &ds))
	require.Equal(t, "apps/v1", ds.APIVersion)
	require.Equal(t, "DaemonSet", ds.Kind)
	require.NotEmpty(t, ds.Name)

	sel := ds.Spec.Selector
	require.NotNil(t, sel)
	require.True(t, labels.SelectorFromSet(sel.MatchLabels).Matches(labels.Set(ds.Spec.Template.Labels)),
		"the selector matches the pod template's labels")

	pod := ds.Spec.Template.Spec
	require.True(t, pod.HostPID, "the host's pid namespace, as the ptp-operator's linuxptp-daemon shares it")
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range pod.Containers {
		require.NotEmpty(t, c.Image, c.Name)
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
