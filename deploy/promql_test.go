package deploy

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

var promql = parser.NewParser(parser.Options{})

// checkExpr parses a PromQL expression with Prometheus' own parser and
// checks it against what evspool exports: every metric it selects exists,
// every label it matches on or groups by is on those metrics (or is one
// Prometheus adds at scrape time). It returns the metrics it names.
func checkExpr(expr string, series exported) ([]string, error) {
	node, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("PromQL: %w", err)
	}
	var names []string
	var problems []error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := selectorName(n)
			names = append(names, name)
			problems = append(problems, checkSelector(name, n.LabelMatchers, series)...)
		case *parser.AggregateExpr:
			problems = append(problems, checkGrouping(n, series)...)
		}
		return nil
	})
	if len(problems) > 0 {
		return names, fmt.Errorf("%q: %w", expr, problems[0])
	}
	return names, nil
}

func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// scrapeSeries are the series Prometheus writes for each target it
// scrapes, whatever the target exports: up is 1 after a scrape that
// worked, 0 after one that failed.
var scrapeSeries = map[string]bool{"up": true}

func checkSelector(name string, matchers []*labels.Matcher, series exported) []error {
	if scrapeSeries[name] {
		return checkTargetMatchers(name, matchers)
	}
	have, ok := series[name]
	if !ok {
		return []error{fmt.Errorf("metric %q is not one evspool exports", name)}
	}
	var errs []error
	for _, m := range matchers {
		if m.Name != labels.MetricName && !have[m.Name] && !isTargetLabel(m.Name) {
			errs = append(errs, fmt.Errorf("%s has no label %q", name, m.Name))
		}
	}
	return errs
}

// checkTargetMatchers checks that a scrape series is matched on target
// labels only (the only labels it has).
func checkTargetMatchers(name string, matchers []*labels.Matcher) []error {
	var errs []error
	for _, m := range matchers {
		if m.Name != labels.MetricName && !isTargetLabel(m.Name) {
			errs = append(errs, fmt.Errorf("%s has no label %q", name, m.Name))
		}
	}
	return errs
}

// checkGrouping checks that by (...) and without (...) name labels the
// metrics under the aggregation carry.
func checkGrouping(agg *parser.AggregateExpr, series exported) []error {
	under := map[string]bool{}
	parser.Inspect(agg.Expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for l := range series[selectorName(vs)] {
				under[l] = true
			}
		}
		return nil
	})
	var errs []error
	for _, l := range agg.Grouping {
		if !under[l] && !isTargetLabel(l) {
			errs = append(errs, fmt.Errorf("%s groups by %q, a label none of its metrics has", agg.Op, l))
		}
	}
	return errs
}

func isTargetLabel(l string) bool {
	for _, t := range targetLabels {
		if l == t {
			return true
		}
	}
	return false
}
