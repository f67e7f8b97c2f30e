package main

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelruntime "go.opentelemetry.io/contrib/instrumentation/runtime"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// telemetryOptions are the settings of setupTelemetry that do not come
// from OTEL_* variables.
type telemetryOptions struct {
	prometheus bool
}

// telemetryOption is an option of setupTelemetry.
type telemetryOption func(*telemetryOptions)

// withPrometheus makes setupTelemetry keep the metrics for a Prometheus
// scrape (telemetry.metrics), beside any OTLP export.
func withPrometheus() telemetryOption {
	return func(o *telemetryOptions) { o.prometheus = true }
}

// prometheusReader returns a reader of the meter provider, with the Go
// runtime's histograms (runtimeProducer), and the handler that serves
// what it reads in the Prometheus exposition formats. Its registry is its
// own, not the process-wide default, so that two workers in one process
// (the tests) do not collide. OpenTelemetry names become Prometheus names
// with their unit and _total: convstream.events.applied is
// convstream_events_applied_total, go.memory.used is go_memory_used_bytes
// (TestPrometheusMetrics).
func prometheusReader() (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(otelruntime.NewProducer()))
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}

// withMetrics serves metrics at GET /metrics and everything else from h;
// h alone when metrics is nil.
func withMetrics(h, metrics http.Handler) http.Handler {
	if metrics == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/", h)
	return mux
}
