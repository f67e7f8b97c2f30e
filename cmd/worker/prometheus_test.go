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

	"github.com/convstream/convstream/internal/promtest"
	"github.com/convstream/convstream/streams"
)

// TestPrometheusMetrics runs the worker with its defaults (no OTLP
// endpoint) and scrapes /metrics on the --http listener, before any event
// and after one. Each page passes promtool check metrics (the same lint,
// in process) and parses with the Prometheus text parser. Before any
// event, every counter of known series is there at zero (a rate() alert
// has data from the start), with the Go runtime's and the process's
// metrics under Prometheus's usual names, the consumer's lag, the NATS
// connection's state, and no otel_scope_* labels. After the event, it is
// counted. With --metrics=false there is no /metrics.
func TestPrometheusMetrics(t *testing.T) {
	ctx := context.Background()
	rw := startRun(t)
	c := rw.client

	families := promtest.ScrapeLinted(t, rw.http)
	zero := map[string]string{
		"convstream_events_applied_total":      `type="` + streams.TypeMessageAppended + `"`,
		"convstream_events_failed_total":       `type="` + streams.TypeMessageUpdated + `"`,
		"convstream_events_skipped_total":      `type="` + streams.TypeMessageDeleted + `"`,
		"convstream_events_reapplied_total":    `type="` + streams.TypeMessageUpdated + `"`,
		"convstream_cache_evictions_total":     `reason="unused"`,
		"convstream_events_deadlettered_total": ``,
		"convstream_inference_requests_total":  `outcome="failed"`,
		"convstream_snapshot_writes_total":     `outcome="conflict"`,
		"convstream_checkpoints_total":         `outcome="busy"`,
		"convstream_compactions_total":         `outcome="failed"`,
		"convstream_rebuilds_total":            `from="checkpoint"`,
	}
	for name, labels := range zero {
		f := families[name]
		if f == nil || f.GetType() != dto.MetricType_COUNTER {
			t.Errorf("no counter %s before any event", name)
			continue
		}
		if v, ok := promtest.SeriesValue(f, labels); !ok || v != 0 {
			t.Errorf("%s{%s} = %v (there: %v), want 0 from the start", name, labels, v, ok)
		}
	}
	for _, name := range []string{
		"go_goroutines", "go_memstats_heap_inuse_bytes", "go_gc_duration_seconds", "go_sched_latencies_seconds",
		"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds",
		"convstream_nats_connected", "convstream_nats_reconnects_total", "target_info",
	} {
		if families[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if v, ok := promtest.SeriesValue(families["convstream_nats_connected"], ""); !ok || v != 1 {
		t.Errorf("convstream_nats_connected = %v, want 1", v)
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetName(), "otel_scope_") {
					t.Fatalf("%s has label %s: scope labels are off by default", name, l.GetName())
				}
			}
		}
	}

	msg := map[string]any{"id": "u1", "role": "user", "content": "Hello", "parentId": nil, "createdAt": 1.0}
	if _, err := c.Send(ctx, "scraped", streams.TypeMessageAppended, msg); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s, err := c.Snapshot(ctx, "scraped"); err == nil && s.Version == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the event was not applied")
		}
	}
	if _, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "scraped"}); err != nil {
		t.Fatal(err)
	}
	// The worker records an inference's duration once its answer is sent:
	// a scrape right after the answer may come first.
	histograms := []string{"convstream_event_duration_seconds", "convstream_inference_duration_seconds"}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		families = promtest.ScrapeLinted(t, rw.http)
		if families[histograms[0]] != nil && families[histograms[1]] != nil || time.Now().After(deadline) {
			break
		}
	}
	applied, _ := promtest.SeriesValue(families["convstream_events_applied_total"], `type="`+streams.TypeMessageAppended+`"`)
	if applied != 1 {
		t.Errorf("convstream_events_applied_total = %v, want 1", applied)
	}
	for _, name := range histograms {
		if f := families[name]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("no histogram %s", name)
		}
	}
	if f := families["convstream_consumer_pending"]; f == nil || f.GetType() != dto.MetricType_GAUGE {
		t.Errorf("no gauge convstream_consumer_pending")
	} else if _, ok := promtest.SeriesValue(f, `consumer="convstream-worker"`); !ok {
		t.Errorf("convstream_consumer_pending has no series of consumer convstream-worker: %v", f.GetMetric())
	}
	t.Logf("/metrics: %d families, convstream_events_applied_total %v", len(families), applied)
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
