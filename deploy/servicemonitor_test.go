package deploy

import (
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// scrapePath is the path from the cluster's Prometheus to evspool, as
// kubernetes.yaml and servicemonitor.yaml declare it: the ServiceMonitor's
// endpoint, the Service port it names, the proxy container that port
// reaches, and the evspool container behind the proxy.
type scrapePath struct {
	ds       *appsv1.DaemonSet
	svc      *corev1.Service
	sm       *monitoringv1.ServiceMonitor
	endpoint monitoringv1.Endpoint
	port     corev1.ServicePort
	proxy    corev1.Container
	evspool  corev1.Container
}

// loadScrapePath decodes both manifests and follows the path, failing
// where a link does not hold: the ServiceMonitor selects the Service (its
// labels and namespace), its endpoint names a port of the Service, the
// Service selects the DaemonSet's pods, and the port's targetPort is a
// port one container declares.
func loadScrapePath(t *testing.T) scrapePath {
	t.Helper()
	k8s := decodeManifest(t, "kubernetes.yaml")
	mon := decodeManifest(t, "servicemonitor.yaml")
	p := scrapePath{
		ds:  one[*appsv1.DaemonSet](t, k8s),
		svc: one[*corev1.Service](t, k8s),
		sm:  one[*monitoringv1.ServiceMonitor](t, mon),
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.sm.Spec.Selector)
	require.NoError(t, err)
	require.False(t, sel.Empty(), "the ServiceMonitor selects some Services, not all")
	require.True(t, sel.Matches(labels.Set(p.svc.Labels)), "the ServiceMonitor's selector %s selects the Service's labels %v", sel, p.svc.Labels)
	ns := p.sm.Spec.NamespaceSelector
	require.True(t, ns.Any || slices.Contains(ns.MatchNames, p.svc.Namespace) || (len(ns.MatchNames) == 0 && p.sm.Namespace == p.svc.Namespace),
		"the ServiceMonitor's namespaceSelector %+v selects the Service's namespace %s", ns, p.svc.Namespace)
	require.True(t, labels.SelectorFromSet(p.svc.Spec.Selector).Matches(labels.Set(p.ds.Spec.Template.Labels)),
		"the Service's selector selects the DaemonSet's pods")

	require.Len(t, p.sm.Spec.Endpoints, 1)
	p.endpoint = p.sm.Spec.Endpoints[0]
	require.NotEmpty(t, p.endpoint.Port, "the endpoint names the Service's port")
	for _, sp := range p.svc.Spec.Ports {
		if sp.Name == p.endpoint.Port {
			p.port = sp
		}
	}
	require.Equal(t, p.endpoint.Port, p.port.Name, "the Service has a port named %s", p.endpoint.Port)
	var found []string
	for _, c := range p.ds.Spec.Template.Spec.Containers {
		if containerPort(c, p.port.TargetPort) != nil {
			p.proxy = c
			found = append(found, c.Name)
		}
		if len(c.Command) > 0 && path.Base(c.Command[0]) == "evspool" {
			p.evspool = c
		}
	}
	require.Len(t, found, 1, "one container declares the Service's targetPort %s", p.port.TargetPort.String())
	require.NotEmpty(t, p.evspool.Name, "a container runs evspool")
	return p
}

// containerPort returns the port of c that a Service's targetPort names
// (by name or number), or nil.
func containerPort(c corev1.Container, target intstr.IntOrString) *corev1.ContainerPort {
	for i, cp := range c.Ports {
		if (target.Type == intstr.String && cp.Name == target.StrVal) || (target.Type == intstr.Int && cp.ContainerPort == target.IntVal) {
			return &c.Ports[i]
		}
	}
	return nil
}

// flagValue returns the value of --name=value in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	require.Failf(t, "flag missing", "no --%s=... in %q", name, args)
	return ""
}

// The proxy listens on the port the Service reaches, over TLS with the
// certificate OpenShift writes for the Service's name, serves the path the
// ServiceMonitor scrapes and forwards it to the address evspool's
// --metrics-addr binds; the ServiceMonitor speaks HTTPS, checks that name
// against the CA that signed it and sends a bearer token.
func TestServiceMonitorReachesEvspool(t *testing.T) {
	p := loadScrapePath(t)
	cp := containerPort(p.proxy, p.port.TargetPort)
	host, port, err := net.SplitHostPort(flagValue(t, p.proxy.Args, "secure-listen-address"))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(int(cp.ContainerPort)), port, "the proxy listens on its declared port")
	require.Contains(t, []string{"", "0.0.0.0"}, host, "the proxy listens on the node's addresses, where Prometheus reaches the pod")

	upstream, err := url.Parse(flagValue(t, p.proxy.Args, "upstream"))
	require.NoError(t, err)
	require.Equal(t, "http", upstream.Scheme)
	metricsAddr := flagValue(t, p.evspool.Command, "metrics-addr")
	require.Equal(t, metricsAddr, upstream.Host, "the proxy's --upstream is evspool's --metrics-addr")
	require.True(t, strings.HasPrefix(metricsAddr, "127.0.0.1:"), "evspool's metrics stay on localhost")
	require.Equal(t, "/metrics", p.endpoint.Path)
	require.Equal(t, []string{p.endpoint.Path}, strings.Split(flagValue(t, p.proxy.Args, "allow-paths"), ","), "the proxy serves the scraped path and nothing else")

	// TLS: the certificate comes from the secret the Service's annotation
	// has OpenShift's service CA write, mounted where the proxy reads it.
	secret := p.svc.Annotations["service.beta.openshift.io/serving-cert-secret-name"]
	require.NotEmpty(t, secret)
	mounts := map[string]string{} // volume: mount path
	for _, m := range p.proxy.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var tlsDir string
	for _, v := range p.ds.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			tlsDir = mounts[v.Name]
		}
	}
	require.NotEmpty(t, tlsDir, "the proxy mounts the secret %s", secret)
	require.Equal(t, path.Join(tlsDir, "tls.crt"), flagValue(t, p.proxy.Args, "tls-cert-file"))
	require.Equal(t, path.Join(tlsDir, "tls.key"), flagValue(t, p.proxy.Args, "tls-private-key-file"))

	ep := p.endpoint
	require.Equal(t, "https", ep.Scheme.String())
	require.NotNil(t, ep.TLSConfig)
	require.False(t, ep.TLSConfig.InsecureSkipVerify != nil && *ep.TLSConfig.InsecureSkipVerify, "the certificate is checked")
	require.NotNil(t, ep.TLSConfig.ServerName)
	require.Equal(t, p.svc.Name+"."+p.svc.Namespace+".svc", *ep.TLSConfig.ServerName, "the name the service CA's certificate holds")
	ca := ep.TLSConfig.CA.ConfigMap
	require.NotNil(t, ca, "the CA bundle from a ConfigMap")
	cm := one[*corev1.ConfigMap](t, decodeManifest(t, "servicemonitor.yaml"))
	require.Equal(t, cm.Name, ca.Name)
	require.Equal(t, "true", cm.Annotations["service.beta.openshift.io/inject-cabundle"], "OpenShift writes the service CA into it")
	require.Equal(t, "service-ca.crt", ca.Key, "the key OpenShift writes")
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", ep.BearerTokenFile, "Prometheus' own token, which the proxy checks")
}

// The proxy's ServiceAccount may create TokenReviews and
// SubjectAccessReviews and nothing else; its token is mounted in the proxy
// container alone. The proxy is as small as the PTP operator's (10m,
// 20Mi) and as sandboxed as the receiver: non-root, read-only, no
// capability, no escalation.
func TestMetricsProxyRBAC(t *testing.T) {
	k8s := decodeManifest(t, "kubernetes.yaml")
	p := loadScrapePath(t)
	sa := one[*corev1.ServiceAccount](t, k8s)
	role := one[*rbacv1.ClusterRole](t, k8s)
	binding := one[*rbacv1.ClusterRoleBinding](t, k8s)
	pod := p.ds.Spec.Template.Spec
	require.Equal(t, sa.Name, pod.ServiceAccountName)
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)
	require.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}, role.Rules)

	require.NotNil(t, pod.AutomountServiceAccountToken)
	require.False(t, *pod.AutomountServiceAccountToken, "no container gets the token by default")
	tokenVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				tokenVolumes[v.Name] = tokenVolumes[v.Name] || s.ServiceAccountToken != nil
			}
		}
	}
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if tokenVolumes[m.Name] {
				require.Equal(t, p.proxy.Name, c.Name, "only the proxy mounts the ServiceAccount's token")
				require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount", m.MountPath, "where the proxy's in-cluster client reads it")
			}
		}
	}

	req := p.proxy.Resources.Requests
	require.LessOrEqual(t, req.Cpu().Cmp(resource.MustParse("10m")), 0, "the proxy's CPU request")
	require.LessOrEqual(t, req.Memory().Cmp(resource.MustParse("20Mi")), 0, "the proxy's memory request")
	sc := p.proxy.SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.RunAsNonRoot && *sc.ReadOnlyRootFilesystem && !*sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Nil(t, sc.Privileged)
}

// Prometheus may discover the Service's endpoints in its namespace, read
// only.
func TestPrometheusDiscoveryRole(t *testing.T) {
	mon := decodeManifest(t, "servicemonitor.yaml")
	role := one[*rbacv1.Role](t, mon)
	binding := one[*rbacv1.RoleBinding](t, mon)
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, binding.RoleRef)
	require.Len(t, binding.Subjects, 1)
	require.Equal(t, rbacv1.ServiceAccountKind, binding.Subjects[0].Kind)
	for _, r := range role.Rules {
		require.ElementsMatch(t, []string{"get", "list", "watch"}, r.Verbs, "read only")
	}
}
