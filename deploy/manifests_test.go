package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kinds are the objects the manifests may hold, each with the Go type the
// API server (or the Prometheus Operator's CRD) decodes it into, and
// whether it lives in a namespace.
var kinds = map[string]struct {
	new        func() any
	namespaced bool
}{
	"apps/v1/DaemonSet": {func() any { return new(appsv1.DaemonSet) }, true},
	"v1/ServiceAccount": {func() any { return new(corev1.ServiceAccount) }, true},
	"v1/Service":        {func() any { return new(corev1.Service) }, true},
	"v1/ConfigMap":      {func() any { return new(corev1.ConfigMap) }, true},
	"rbac.authorization.k8s.io/v1/ClusterRole":                    {func() any { return new(rbacv1.ClusterRole) }, false},
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding":             {func() any { return new(rbacv1.ClusterRoleBinding) }, false},
	"rbac.authorization.k8s.io/v1/Role":                           {func() any { return new(rbacv1.Role) }, true},
	"rbac.authorization.k8s.io/v1/RoleBinding":                    {func() any { return new(rbacv1.RoleBinding) }, true},
	"monitoring.coreos.com/v1/ServiceMonitor":                     {func() any { return new(monitoringv1.ServiceMonitor) }, true},
	"monitoring.coreos.com/v1/" + monitoringv1.PrometheusRuleKind: {func() any { return new(monitoringv1.PrometheusRule) }, true},
}

// decodeManifest reads every YAML document of a manifest and decodes each
// strictly into its kind's Go type: an unknown or misplaced field fails,
// as kubectl apply --validate=strict would. A kind the manifests should not
// hold fails too.
func decodeManifest(t *testing.T, file string) []any {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []any
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s, document %d", file, i)
		js, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err, "%s, document %d", file, i)
		if string(js) == "null" {
			continue // comments only
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		require.NoError(t, yaml.Unmarshal(doc, &tm), "%s, document %d", file, i)
		k, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		require.True(t, ok, "%s, document %d: kind %s %s is not one the manifests hold", file, i, tm.APIVersion, tm.Kind)
		obj := k.new()
		require.NoError(t, yaml.UnmarshalStrict(doc, obj), "%s, document %d (%s)", file, i, tm.Kind)
		meta := objectMeta(obj)
		require.NotEmpty(t, meta.Name, "%s, document %d (%s): a name", file, i, tm.Kind)
		if k.namespaced {
			require.Equal(t, "ptp", meta.Namespace, "%s: %s %s in the PTP daemon's namespace", file, tm.Kind, meta.Name)
		} else {
			require.Empty(t, meta.Namespace, "%s: %s %s is cluster-scoped", file, tm.Kind, meta.Name)
		}
		objs = append(objs, obj)
	}
	return objs
}

// objectMeta returns an object's name and namespace through the accessor
// every API type embeds.
func objectMeta(obj any) struct{ Name, Namespace string } {
	m := obj.(interface {
		GetName() string
		GetNamespace() string
	})
	return struct{ Name, Namespace string }{m.GetName(), m.GetNamespace()}
}

// one returns the only object of type T among objs.
func one[T any](t *testing.T, objs []any) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	require.Len(t, found, 1, "one %T", *new(T))
	return found[0]
}

// Each file applies alone: kubernetes.yaml holds only core and RBAC kinds
// (it applies on a cluster without the Prometheus Operator), the
// Operator's kinds are in files of their own.
func TestManifestsDecodeStrictly(t *testing.T) {
	tests := map[string][]string{
		"kubernetes.yaml":     {"*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.Service", "*v1.DaemonSet"},
		"servicemonitor.yaml": {"*v1.ConfigMap", "*v1.ServiceMonitor", "*v1.Role", "*v1.RoleBinding"},
		"prometheusrule.yaml": {"*v1.PrometheusRule"},
	}
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			var got []string
			for _, o := range decodeManifest(t, file) {
				got = append(got, fmt.Sprintf("%T", o))
			}
			require.Equal(t, want, got, "%s holds these objects, in this order (the RBAC before what uses it)", file)
		})
	}
}
