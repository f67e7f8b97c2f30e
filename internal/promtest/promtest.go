// Package promtest reads a binary's Prometheus /metrics in tests: the
// worker's and the orchestrator's tests scrape them the way Prometheus
// does, lint them the way promtool check metrics does, and read series by
// their labels.
package promtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape gets /metrics from addr (host:port) and returns its families by
// name; t fails unless it answers 200 in the text format.
func Scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	return parse(t, get(t, addr))
}

// ScrapeLinted is Scrape that also fails t on every problem promtool check
// metrics would report.
func ScrapeLinted(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	body := get(t, addr)
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promtool check metrics: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promtool check metrics: %s: %s", p.Metric, p.Text)
	}
	return parse(t, body)
}

// SeriesValue returns the value of f's first series that has every label
// of labels (`name="value",...`; empty: the first series) and whether
// there is one. A series that is neither a counter nor a gauge reads 0.
func SeriesValue(f *dto.MetricFamily, labels string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		have := map[string]bool{}
		for _, l := range m.GetLabel() {
			have[fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())] = true
		}
		match := true
		for _, want := range strings.Split(labels, ",") {
			if want != "" && !have[want] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

func get(t testing.TB, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return body
}

func parse(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}
