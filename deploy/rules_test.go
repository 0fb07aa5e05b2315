package deploy

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// parseRules parses a rule file as Prometheus loads it: unknown fields
// refused, every expression and template checked.
func parseRules(t *testing.T, where string, content []byte) *rulefmt.RuleGroups {
	t.Helper()
	rgs, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s does not load in Prometheus", where)
	require.NotNil(t, rgs)
	return rgs
}

func TestAlertRules(t *testing.T) {
	raw, err := os.ReadFile("alerts.yaml")
	require.NoError(t, err)
	rgs := parseRules(t, "alerts.yaml", raw)
	series, _ := scrape(t)
	seen := map[string]bool{}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "alerts.yaml holds alerts only")
			require.False(t, seen[r.Alert], "alert %s twice", r.Alert)
			seen[r.Alert] = true
			_, err := checkExpr(r.Expr, series)
			require.NoError(t, err, "alert %s", r.Alert)
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "alert %s: severity", r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], "alert %s: summary", r.Alert)
			require.NotEmpty(t, r.Annotations["description"], "alert %s: description", r.Alert)
			// cmd/evspool's docs tests check that the section exists.
			require.Equal(t, runbookPage+"#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"], "alert %s: runbook_url, its section of %s", r.Alert, runbookPage)
		}
	}
	// Every way evspool loses an event has an alert.
	// And evspool itself being gone.
	for _, a := range []string{"EvspoolDroppingEvents", "EvspoolNotSpooling", "EvspoolDeadLetters", "EvspoolEventsExpired", "EvspoolGone"} {
		require.True(t, seen[a], "no alert %s", a)
	}
	t.Logf("%d alerts parsed and checked against %d exported series names", len(seen), len(series))
}

// runbookPage is where every alert's runbook_url points, at a section:
// the base URL, one setting (docs/operations.md, "Alerts and dashboard").
const runbookPage = "https://github.com/evspool/evspool/blob/main/docs/troubleshooting.md"

// The runbook links' base is one setting: replacing that one string, as
// docs/operations.md tells an installer to, moves every runbook_url of
// both rule files to a copy the readers of an alert can reach, and leaves
// no link to the repository behind.
func TestRunbookBaseIsOneSetting(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(doc), runbookPage), "docs/operations.md names the base to replace, %s", runbookPage)
	const mirror = "https://runbooks.example.com/evspool/troubleshooting.html"
	for _, file := range []string{"alerts.yaml", "prometheusrule.yaml"} {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		moved := strings.ReplaceAll(string(raw), runbookPage, mirror)
		require.NotContains(t, moved, "github.com", "%s: a link the base does not cover", file)
		if file == "prometheusrule.yaml" {
			var pr monitoringv1.PrometheusRule
			require.NoError(t, yaml.UnmarshalStrict([]byte(moved), &pr))
			spec, err := yaml.Marshal(pr.Spec)
			require.NoError(t, err)
			moved = string(spec)
		}
		n := 0
		for _, g := range parseRules(t, file, []byte(moved)).Groups {
			for _, r := range g.Rules {
				n++
				require.Equal(t, mirror+"#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"], "%s: alert %s", file, r.Alert)
			}
		}
		require.Positive(t, n)
	}
}

// alerts_test.yaml has promtool test cases for the alerts that matter
// most, and passes promtool test rules where promtool is installed (go
// install github.com/prometheus/prometheus/cmd/promtool@v0.316.0, or
// Debian's prometheus package); without it the cases are not run, and the
// test says so.
func TestAlertRulesPromtool(t *testing.T) {
	raw, err := os.ReadFile("alerts_test.yaml")
	require.NoError(t, err)
	var cases struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cases))
	require.Equal(t, []string{"alerts.yaml"}, cases.RuleFiles)
	firing := map[string]bool{}
	for _, tc := range cases.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			}
		}
	}
	for _, a := range []string{"EvspoolGone", "EvspoolDroppingEvents"} {
		require.True(t, firing[a], "alerts_test.yaml has a case where %s fires", a)
	}
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not found: alerts_test.yaml was not run (go install github.com/prometheus/prometheus/cmd/promtool@v0.316.0)")
	}
	out, err := exec.Command("promtool", "test", "rules", "alerts_test.yaml").CombinedOutput()
	require.NoError(t, err, "promtool test rules alerts_test.yaml:\n%s", out)
	t.Logf("promtool test rules alerts_test.yaml:\n%s", out)
}

// The PrometheusRule decodes strictly into the Prometheus Operator's type and
// holds exactly the rules of alerts.yaml, which Prometheus loads as it would
// the rule file the Operator writes from it.
func TestPrometheusRule(t *testing.T) {
	raw, err := os.ReadFile("prometheusrule.yaml")
	require.NoError(t, err)
	var pr monitoringv1.PrometheusRule
	require.NoError(t, yaml.UnmarshalStrict(raw, &pr))
	require.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	require.Equal(t, monitoringv1.PrometheusRuleKind, pr.Kind)
	require.NotEmpty(t, pr.Name)
	spec, err := yaml.Marshal(pr.Spec)
	require.NoError(t, err)
	fromOperator := parseRules(t, "prometheusrule.yaml's spec", spec)

	file, err := os.ReadFile("alerts.yaml")
	require.NoError(t, err)
	require.Equal(t, parseRules(t, "alerts.yaml", file).Groups, fromOperator.Groups,
		"prometheusrule.yaml and alerts.yaml hold the same rules")
}
