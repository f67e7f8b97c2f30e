// Package otelsetup configures OpenTelemetry from the standard OTEL_*
// environment variables, the same way for the worker and for convctl, so
// that both export to the same collector and their spans join in one trace.
package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Disabled reports whether OTEL_SDK_DISABLED=true turns telemetry off.
func Disabled(getenv func(string) string) bool {
	return strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true")
}

// ExporterWanted reads OTEL_<KIND>_EXPORTER (kind TRACES or METRICS): otlp,
// none, or unset, which means otlp when an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_<KIND>_ENDPOINT).
func ExporterWanted(getenv func(string) string, kind string) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(getenv("OTEL_" + kind + "_EXPORTER")))
	switch v {
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+kind+"_ENDPOINT") != "", nil
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	}
	return false, fmt.Errorf("OTEL_%s_EXPORTER=%s: only otlp and none are supported", kind, v)
}

// CheckProtocol refuses an OTLP protocol other than http/protobuf, the one
// the exporters here speak.
func CheckProtocol(getenv func(string) string) error {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return fmt.Errorf("%s=%s: only http/protobuf is supported", v, p)
		}
	}
	return nil
}

// Resource describes the process: service.name is service unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
func Resource(ctx context.Context, service string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES override
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}

// Tracing is a tracer provider and how to flush it.
type Tracing struct {
	// Provider is the no-op provider when no trace is exported.
	Provider trace.TracerProvider
	// Shutdown flushes and stops the exporter; it does nothing when none.
	Shutdown func(context.Context) error
}

// Traces returns the tracer provider the OTEL_* variables ask for: OTLP over
// HTTP when OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is set (the
// exporter reads the other OTEL_EXPORTER_OTLP_* variables itself), with the
// sampler of OTEL_TRACES_SAMPLER; the no-op provider otherwise. Export
// errors go to log (LogSpanErrors), not to the standard logger.
func Traces(ctx context.Context, getenv func(string) string, log *slog.Logger, res *resource.Resource) (*Tracing, error) {
	none := &Tracing{Provider: tracenoop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}
	if Disabled(getenv) {
		return none, nil
	}
	want, err := ExporterWanted(getenv, "TRACES")
	if err != nil || !want {
		return none, err
	}
	if err := CheckProtocol(getenv); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return TracesTo(LogSpanErrors(exp, log), res), nil
}

// TracesTo returns a tracer provider batching its spans to exp.
func TracesTo(exp sdktrace.SpanExporter, res *resource.Resource) *Tracing {
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp)}
	if res != nil {
		opts = append(opts, sdktrace.WithResource(res))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracing{Provider: tp, Shutdown: tp.Shutdown}
}
