package otelsetup

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Prometheus returns a reader of a meter provider and the handler that
// serves what it reads in the Prometheus exposition formats, with the Go
// runtime's and the process's metrics under the names Prometheus's own
// collectors give them (go_goroutines, go_memstats_*,
// go_sched_latencies_seconds, process_resident_memory_bytes,
// process_cpu_seconds_total, process_open_fds, process_start_time_seconds,
// ...): the names dashboards and alerts for Go services expect. The
// OpenTelemetry runtime metrics (go.memory.used, go.goroutine.count, ...)
// go to OTLP only: their Prometheus names fail promtool's lint
// (go_goroutine_count) and repeat the collectors'. The registries are the
// handler's own, not the process-wide default, so that two services in
// one process (the tests) do not collide. OpenTelemetry names become
// Prometheus names with their unit and _total: convstream.events.applied
// is convstream_events_applied_total. scopeLabels keeps the otel_scope_*
// labels, which every series of one service shares.
func Prometheus(scopeLabels bool) (sdkmetric.Reader, http.Handler, error) {
	reg := prometheus.NewRegistry()
	opts := []otelprom.Option{otelprom.WithRegisterer(reg)}
	if !scopeLabels {
		opts = append(opts, otelprom.WithoutScopeInfo())
	}
	exp, err := otelprom.New(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	host := prometheus.NewRegistry()
	if err := host.Register(collectors.NewGoCollector(
		collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler))); err != nil {
		return nil, nil, fmt.Errorf("go collector: %w", err)
	}
	if err := host.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, fmt.Errorf("process collector: %w", err)
	}
	gather := prometheus.Gatherers{withoutRuntime(reg), host}
	return exp, promhttp.HandlerFor(gather, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}

// withoutRuntime gathers from g all but the OpenTelemetry runtime
// metrics, every family named go_*: convstream's own are convstream_*.
func withoutRuntime(g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := g.Gather()
		kept := families[:0]
		for _, f := range families {
			if !strings.HasPrefix(f.GetName(), "go_") {
				kept = append(kept, f)
			}
		}
		return kept, err
	})
}

// WithMetrics serves metrics at GET /metrics and everything else from h;
// h alone when metrics is nil.
func WithMetrics(h, metrics http.Handler) http.Handler {
	if metrics == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/", h)
	return mux
}
