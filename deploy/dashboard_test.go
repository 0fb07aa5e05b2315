package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The parts of a Grafana dashboard the checks read; unknown fields are
// allowed (Grafana's model is large), but these must be right.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *dsRef                   `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// grafanaVars replaces the variables Grafana fills in before a query goes
// to Prometheus with values PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$instance", ".*")

func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d), "dashboard.json is JSON")
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)
	require.GreaterOrEqual(t, d.SchemaVersion, 36, "panels with datasource references (Grafana 9+)")
	series, _ := scrape(t)

	named := map[string]bool{}
	ids, titles := map[int]bool{}, map[string]bool{}
	for _, p := range d.Panels {
		where := "panel " + p.Title
		require.NotZero(t, p.ID, where)
		require.False(t, ids[p.ID], "%s: id %d taken", where, p.ID)
		ids[p.ID], titles[p.Title] = true, true
		require.Contains(t, []string{"timeseries", "heatmap", "stat", "gauge"}, p.Type, where)
		require.NotNil(t, p.Datasource, where)
		require.Equal(t, "prometheus", p.Datasource.Type, where)
		require.Positive(t, p.GridPos.W*p.GridPos.H, "%s: has a size", where)
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "%s: within the 24-column grid", where)
		require.NotEmpty(t, p.Targets, where)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			require.False(t, refs[tg.RefID], "%s: refId %q twice", where, tg.RefID)
			refs[tg.RefID] = true
			names, err := checkExpr(grafanaVars.Replace(tg.Expr), series)
			require.NoError(t, err, where)
			for _, n := range names {
				named[n] = true
			}
		}
	}
	// What an operator looks for first, each on a panel.
	for _, title := range []string{"Pending backlog", "Oldest pending age", "Delivery rate", "Drops and losses", "Receiver connection", "Commit latency"} {
		require.True(t, titles[title], "no panel %q", title)
	}
	for _, m := range []string{"evspool_spool_pending_events", "evspool_oldest_pending_age_seconds", "evspool_events_delivered_total",
		"evspool_events_dropped_total", "evspool_spool_errors_total", "evspool_events_dead_lettered_total", "evspool_events_expired_total",
		"evspool_events_refused_total", "evspool_events_unreadable_total",
		"evspool_reconnects_total", "evspool_commit_duration_seconds_bucket"} {
		require.True(t, named[m], "no panel shows %s", m)
	}
	checkTemplating(t, &d, series)
}

// The instance variable's label_values() query names an exported metric.
func checkTemplating(t *testing.T, d *dashboard, series exported) {
	t.Helper()
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	found := false
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		m := labelValues.FindStringSubmatch(q["query"].(string))
		require.NotNil(t, m, "variable %s: a label_values(metric, label) query", v.Name)
		require.Contains(t, series, m[1], "variable %s", v.Name)
		require.True(t, series[m[1]][m[2]] || isTargetLabel(m[2]), "variable %s: %s has no label %s", v.Name, m[1], m[2])
		found = found || v.Name == "instance"
	}
	require.True(t, found, "an instance variable")
}
