package main

// telemetryOptions are the settings of setupTelemetry that do not come
// from OTEL_* variables.
type telemetryOptions struct {
	prometheus bool
	// scopeLabels keeps the otel_scope_* labels on every Prometheus series.
	scopeLabels bool
}

// telemetryOption is an option of setupTelemetry.
type telemetryOption func(*telemetryOptions)

// withPrometheus makes setupTelemetry keep the metrics for a Prometheus
// scrape (telemetry.metrics, served by otelsetup.Prometheus's handler),
// beside any OTLP export; scopeLabels keeps the labels naming the
// OpenTelemetry scope of each series (--metrics-scope-labels), which
// every series of the worker shares.
func withPrometheus(scopeLabels bool) telemetryOption {
	return func(o *telemetryOptions) { o.prometheus, o.scopeLabels = true, scopeLabels }
}
