package helmchart_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestAlertsAndDashboard renders the PrometheusRule and the Grafana
// dashboard's ConfigMap. The rules parse and validate as `promtool check
// rules` has them (rulefmt, with PromQL's parser), select the release's
// workers, and every metric they and the dashboard's queries name is one
// docs/operations.md's table documents; the dashboard is JSON whose every
// query parses.
func TestAlertsAndDashboard(t *testing.T) {
	objs, _ := mustRender(t, []string{"values-observability.yaml"})
	rules := objs.ofKind("PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules", len(rules))
	}
	pr := rules[0].obj.(*unstructured.Unstructured)
	if pr.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v", pr.GetLabels())
	}
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	raw, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(raw, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	for _, err := range errs {
		t.Errorf("promtool check rules: %v", err)
	}
	if groups == nil || len(groups.Groups) != 1 {
		t.Fatalf("rule groups %+v", groups)
	}
	documented := documentedMetrics(t)
	var alerts []string
	for _, r := range groups.Groups[0].Rules {
		alerts = append(alerts, r.Alert)
		if !strings.Contains(r.Expr, `namespace="chat", job="demo-convstream"`) {
			t.Errorf("%s: %s selects other jobs' series", r.Alert, r.Expr)
		}
		checkDocumented(t, r.Alert, r.Expr, documented)
	}
	for _, want := range []string{"ConvstreamDown", "ConvstreamNATSDisconnected", "ConvstreamConsumerLag", "ConvstreamDeadLetters", "ConvstreamInferenceSlow"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}

	var dash *corev1.ConfigMap
	for _, o := range objs.ofKind("ConfigMap") {
		if cm := o.obj.(*corev1.ConfigMap); cm.Labels["grafana_dashboard"] == "1" {
			dash = cm
		}
	}
	if dash == nil {
		t.Fatal("no ConfigMap labelled grafana_dashboard")
	}
	var d struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(dash.Data["convstream.json"]), &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	p := parser.NewParser(parser.Options{})
	queries := 0
	for _, panel := range d.Panels {
		for _, q := range panel.Targets {
			queries++
			expr := strings.ReplaceAll(q.Expr, "$__rate_interval", "5m")
			if _, err := p.ParseExpr(expr); err != nil {
				t.Errorf("dashboard panel %q: %s: %v", panel.Title, q.Expr, err)
			}
			checkDocumented(t, "dashboard panel "+panel.Title, q.Expr, documented)
		}
	}
	if len(d.Panels) < 8 || queries < 15 {
		t.Errorf("dashboard %q: %d panels, %d queries", d.Title, len(d.Panels), queries)
	}
}

// metricName matches the worker's metric names in a query, without a
// histogram's series suffix.
var metricName = regexp.MustCompile(`\b(convstream_[a-z_]+?|process_[a-z_]+|go_[a-z_]+)(_bucket)?\b`)

// checkDocumented requires every metric expr names to be in documented.
func checkDocumented(t *testing.T, where, expr string, documented map[string]bool) {
	t.Helper()
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		if !documented[m[1]] {
			t.Errorf("%s: %s is not in docs/operations.md's table of metrics", where, m[1])
		}
	}
}

// documentedMetrics returns the metric names docs/operations.md's
// "Metrics and alerts" section names in backquotes.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Metrics and alerts")
	if !ok {
		t.Fatal(`docs/operations.md has no "Metrics and alerts" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:convstream|process|go)_[a-z_]+)`").FindAllStringSubmatch(section, -1) {
		names[m[1]] = true
	}
	return names
}
