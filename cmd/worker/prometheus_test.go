package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/convstream/convstream/streams"
)

// TestPrometheusMetrics runs the worker with its defaults (no OTLP
// endpoint), applies an event, scrapes /metrics on the --http listener
// and parses the page with the Prometheus text parser: the worker's own
// metrics and the Go runtime's are there, with the event counted. With
// --metrics=false there is no /metrics.
func TestPrometheusMetrics(t *testing.T) {
	ctx := context.Background()
	rw := startRun(t)
	c := rw.client
	msg := map[string]any{"id": "u1", "role": "user", "content": "Hello", "parentId": nil, "createdAt": 1.0}
	if _, err := c.Send(ctx, "scraped", streams.TypeMessageAppended, msg); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s, err := c.Snapshot(ctx, "scraped"); err == nil && s.Version == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the event was not applied")
		}
	}

	resp, err := http.Get("http://" + rw.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	applied := families["convstream_events_applied_total"]
	if applied == nil || applied.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("no counter convstream_events_applied_total among %d families", len(families))
	}
	var n float64
	for _, m := range applied.GetMetric() {
		n += m.GetCounter().GetValue()
	}
	if n < 1 {
		t.Errorf("convstream_events_applied_total = %v, want at least 1", n)
	}
	for _, name := range []string{"convstream_event_duration_seconds", "go_memory_used_bytes", "go_goroutine_count", "go_schedule_duration_seconds", "target_info"} {
		if families[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	t.Logf("/metrics: %d families, convstream_events_applied_total %v", len(families), n)
}

// BenchmarkMetricsScrape measures a Prometheus scrape of /metrics (served
// and read in this process) from a worker that has applied events of every
// type to 200 conversations, so that every instrument has its series.
// Divide by the scrape interval for the share of a core it costs.
func BenchmarkMetricsScrape(b *testing.B) {
	ctx := context.Background()
	rw := startRun(b, "--log-level", "warn")
	c := rw.client
	for i := range 200 {
		conv := fmt.Sprintf("scraped-%d", i)
		for _, e := range []struct {
			typ  string
			data map[string]any
		}{
			{streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "Hello"}},
			{streams.TypeMessageAppended, map[string]any{"id": "a1", "parentId": "u1", "role": "assistant", "content": "Hi"}},
			{streams.TypeMessageUpdated, map[string]any{"id": "a1", "content": "Hi!"}},
			{streams.TypeMessageDeleted, map[string]any{"id": "a1"}},
			{streams.TypeMessageAppended, map[string]any{"role": "user"}}, // rejected: no id
		} {
			if _, err := c.Send(ctx, conv, e.typ, e.data); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: conv}); err != nil {
			b.Fatal(err)
		}
	}
	url := "http://" + rw.http + "/metrics"
	size := 0
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /metrics: %v, %v", resp.Status, err)
		}
		size = int(n)
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}

// TestMetricsOff: --metrics=false serves no /metrics.
func TestMetricsOff(t *testing.T) {
	tel, err := setupTelemetry(context.Background(), func(string) string { return "" }, discard())
	if err != nil {
		t.Fatal(err)
	}
	if tel.metrics != nil {
		t.Error("a Prometheus handler without withPrometheus")
	}
	o, err := parseFlags([]string{"--metrics=false"}, func(string) string { return "" }, nil)
	if err != nil || o.metrics {
		t.Errorf("--metrics=false: %v, metrics %v", err, o != nil && o.metrics)
	}
	if o, err := parseFlags(nil, func(string) string { return "" }, nil); err != nil || !o.metrics {
		t.Errorf("default: %v, want metrics on", err)
	}
}
