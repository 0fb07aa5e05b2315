package deploy

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// targetLabelsOf returns the labels Prometheus gives every series of a
// target of the ServiceMonitor's endpoint, a pod behind svc, as the
// Prometheus Operator writes the scrape configuration
// (generateServiceMonitorConfig in its pkg/prometheus/promcfg.go), in its
// order: namespace, service, pod, container, the targetLabels and
// podTargetLabels, job (the Service's name, or the value of its label
// jobLabel names), endpoint; instance is Prometheus' own. A value is ""
// where each target has its own (pod, instance). Relabelings are not
// modelled: the test fails on one rather than guess.
func targetLabelsOf(t *testing.T, p scrapePath) map[string]string {
	t.Helper()
	sm, ep, svc := p.sm, p.endpoint, p.svc
	require.Empty(t, ep.RelabelConfigs, "relabelings change the target's labels: model them in targetLabelsOf first")
	require.Empty(t, ep.MetricRelabelConfigs, "metricRelabelings change the series' labels: model them in targetLabelsOf first")
	require.False(t, ep.HonorLabels, "honorLabels would let evspool's own labels win")
	l := map[string]string{
		"instance":  "",
		"namespace": svc.Namespace,
		"service":   svc.Name,
		"pod":       "",
		"container": p.proxy.Name, // the container declaring the scraped port
	}
	for _, k := range sm.Spec.TargetLabels {
		if v := svc.Labels[k]; v != "" {
			l[sanitizeLabelName(k)] = v
		}
	}
	for _, k := range sm.Spec.PodTargetLabels {
		if v := p.ds.Spec.Template.Labels[k]; v != "" {
			l[sanitizeLabelName(k)] = v
		}
	}
	l["job"] = svc.Name
	if v := svc.Labels[sm.Spec.JobLabel]; sm.Spec.JobLabel != "" && v != "" {
		l["job"] = v
	}
	l["endpoint"] = ep.Port
	return l
}

// sanitizeLabelName is the Operator's: what is not a letter, a digit or
// _ becomes _.
func sanitizeLabelName(s string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(s, "_")
}

// templateLabel finds $labels.NAME in a rule's templates.
var templateLabel = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)

// checkRuleLabels checks that every rule keys only on labels its series
// really carry: each label a selector matches, groups by or matches on
// is the metric's own (in a live scrape of evspool) or one the target
// gives, and a target label matched against a fixed value (job="evspool")
// matches the value the target gives; each $labels.NAME in a template is
// one of those labels.
func checkRuleLabels(rgs *rulefmt.RuleGroups, target map[string]string, series exported) []error {
	var errs []error
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			node, err := promql.ParseExpr(r.Expr)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Alert, err))
				continue
			}
			own := map[string]bool{} // labels of the metrics the rule names
			parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					for l := range series[selectorName(vs)] {
						own[l] = true
					}
					for _, m := range vs.LabelMatchers {
						errs = append(errs, checkMatcher(r.Alert, selectorName(vs), m, series, target)...)
					}
				}
				return nil
			})
			var named []string
			parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
				switch n := n.(type) {
				case *parser.AggregateExpr:
					named = append(named, n.Grouping...)
				case *parser.BinaryExpr:
					if n.VectorMatching != nil {
						named = append(named, n.VectorMatching.MatchingLabels...)
						named = append(named, n.VectorMatching.Include...)
					}
				}
				return nil
			})
			for _, text := range templates(r) {
				for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
					named = append(named, m[1])
				}
			}
			for _, l := range named {
				if _, ok := target[l]; !ok && !own[l] {
					errs = append(errs, fmt.Errorf("%s: label %q is neither its metrics' own nor one the ServiceMonitor gives (%s)", r.Alert, l, keys(target)))
				}
			}
		}
	}
	return errs
}

func checkMatcher(alert, metric string, m *labels.Matcher, series exported, target map[string]string) []error {
	if m.Name == labels.MetricName || series[metric][m.Name] {
		return nil
	}
	v, ok := target[m.Name]
	switch {
	case !ok:
		return []error{fmt.Errorf("%s: %s{%s} selects a label the ServiceMonitor does not give (%s)", alert, metric, m, keys(target))}
	case v != "" && !m.Matches(v):
		return []error{fmt.Errorf("%s: %s{%s} selects nothing: the ServiceMonitor gives %s=%q", alert, metric, m, m.Name, v)}
	}
	return nil
}

func templates(r rulefmt.Rule) []string {
	var out []string
	for _, m := range []map[string]string{r.Labels, r.Annotations} {
		for _, v := range m {
			out = append(out, v)
		}
	}
	return out
}

func keys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Every rule, in alerts.yaml and in prometheusrule.yaml, keys only on
// labels the ServiceMonitor's scrape really produces, with the values it
// gives: EvspoolGone's job="evspool" is the Service's name.
func TestRulesUseServiceMonitorLabels(t *testing.T) {
	p := loadScrapePath(t)
	target := targetLabelsOf(t, p)
	series, _ := scrape(t)
	for _, file := range []string{"alerts.yaml", "prometheusrule.yaml"} {
		rgs := ruleGroupsOf(t, file)
		require.Empty(t, checkRuleLabels(rgs, target, series), "%s against the labels of servicemonitor.yaml's targets", file)
	}
	t.Logf("rules checked against the ServiceMonitor's target labels %v", target)
}

// ruleGroupsOf parses a rule file, or a PrometheusRule's spec, as
// Prometheus loads it.
func ruleGroupsOf(t *testing.T, file string) *rulefmt.RuleGroups {
	t.Helper()
	if file == "prometheusrule.yaml" {
		pr := one[*monitoringv1.PrometheusRule](t, decodeManifest(t, file))
		spec, err := yaml.Marshal(pr.Spec)
		require.NoError(t, err)
		return parseRules(t, file, spec)
	}
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	return parseRules(t, file, raw)
}

// The check fails on a mismatch between the rules and the ServiceMonitor,
// whichever side changes.
func TestRuleLabelsMismatchFails(t *testing.T) {
	series, _ := scrape(t)
	rules := ruleGroupsOf(t, "alerts.yaml")
	tests := map[string]struct {
		change func(*scrapePath)
		rules  string // instead of alerts.yaml
		want   string
	}{
		"the ServiceMonitor takes the job from a label": {
			change: func(p *scrapePath) { p.sm.Spec.JobLabel = "app" }, // the Service's app: ptp-daemon
			want:   `the ServiceMonitor gives job="ptp-daemon"`,
		},
		"the Service is renamed": {
			change: func(p *scrapePath) { p.svc.Name = "evspool-metrics" },
			want:   `the ServiceMonitor gives job="evspool-metrics"`,
		},
		"a rule selects a label no target has": {
			rules: `{"groups": [{"name": "x", "rules": [{"alert": "X", "expr": "up{job=\"evspool\", node=\"a\"} == 0"}]}]}`,
			want:  `selects a label the ServiceMonitor does not give`,
		},
		"a summary names a label no series has": {
			rules: `{"groups": [{"name": "x", "rules": [{"alert": "X", "expr": "evspool_connected == 0", "annotations": {"summary": "{{ $labels.node }}"}}]}]}`,
			want:  `label "node" is neither its metrics' own nor one the ServiceMonitor gives`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := loadScrapePath(t)
			if tc.change != nil {
				tc.change(&p)
			}
			rgs := rules
			if tc.rules != "" {
				rgs = parseRules(t, name, []byte(tc.rules))
			}
			errs := checkRuleLabels(rgs, targetLabelsOf(t, p), series)
			require.NotEmpty(t, errs)
			require.ErrorContains(t, errs[0], tc.want)
		})
	}
}

// alerts_test.yaml's input series are the series the ServiceMonitor's
// scrape produces: every series of the evspool job carries every target
// label, with the ServiceMonitor's values, and no label that neither the
// metric nor the target has; a series of another job is another target,
// and no evspool metric comes from one.
func TestPromtoolCasesUseServiceMonitorLabels(t *testing.T) {
	target := targetLabelsOf(t, loadScrapePath(t))
	series, _ := scrape(t)
	raw, err := os.ReadFile("alerts_test.yaml")
	require.NoError(t, err)
	var cases struct {
		Tests []struct {
			InputSeries []struct {
				Series string `json:"series"`
			} `json:"input_series"`
		} `json:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cases))
	n := 0
	for _, tc := range cases.Tests {
		for _, in := range tc.InputSeries {
			lbls, err := promql.ParseMetric(in.Series)
			require.NoError(t, err, in.Series)
			name := lbls.Get(labels.MetricName)
			if lbls.Get("job") != target["job"] {
				require.False(t, strings.HasPrefix(name, "evspool_"), "%s: an evspool metric of another job", in.Series)
				continue
			}
			n++
			for l, v := range target {
				require.NotEmpty(t, lbls.Get(l), "%s: no %s, which every target of the ServiceMonitor has", in.Series, l)
				if v != "" {
					require.Equal(t, v, lbls.Get(l), "%s: %s is not the ServiceMonitor's", in.Series, l)
				}
			}
			lbls.Range(func(l labels.Label) {
				_, isTarget := target[l.Name]
				require.True(t, l.Name == labels.MetricName || isTarget || series[name][l.Name], "%s: %s is neither %s's own label nor a target's", in.Series, l.Name, name)
			})
		}
	}
	require.Positive(t, n, "input series of the evspool job")
}
