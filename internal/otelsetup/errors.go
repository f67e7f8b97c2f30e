package otelsetup

import (
	"context"
	"log/slog"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The SDK's batch span processor and periodic metric reader hand an
// exporter's error to otel.Handle, whose default handler writes it with the
// standard logger, outside the structured log. Setting otel.SetErrorHandler
// would change process-wide state (two workers in one test process would
// share it), so the exporters are wrapped instead: an export error is logged
// through slog where it happens and not returned to the SDK, which has
// nothing to do with it but report it (TestExportErrorsGoThroughSlog).

// LogSpanErrors returns exp, logging its export errors to log.
func LogSpanErrors(exp sdktrace.SpanExporter, log *slog.Logger) sdktrace.SpanExporter {
	return spanErrors{exp, log}
}

type spanErrors struct {
	sdktrace.SpanExporter
	log *slog.Logger
}

func (e spanErrors) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.log.Warn("exporting traces failed", "spans", len(spans), "err", err)
	}
	return nil
}

// LogMetricErrors returns exp, logging its export errors to log.
func LogMetricErrors(exp sdkmetric.Exporter, log *slog.Logger) sdkmetric.Exporter {
	return metricErrors{exp, log}
}

type metricErrors struct {
	sdkmetric.Exporter
	log *slog.Logger
}

func (e metricErrors) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.log.Warn("exporting metrics failed", "err", err)
	}
	return nil
}
