package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	otelruntime "go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/internal/otelsetup"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// telemetry holds the providers the worker reports to and how to flush them.
type telemetry struct {
	tracer trace.TracerProvider
	meter  metric.MeterProvider
	// metrics serves the Prometheus exposition of the meter's metrics
	// (withPrometheus); nil without it.
	metrics  http.Handler
	shutdown []func(context.Context) error
}

// setupTelemetry configures OpenTelemetry from the standard variables. By
// default nothing is exported. OTLP over HTTP is used for traces when
// OTEL_TRACES_EXPORTER=otlp, or when it is unset and an OTLP endpoint is
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); the
// same for metrics with OTEL_METRICS_EXPORTER. The exporters read the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS) themselves;
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the resource and
// OTEL_TRACES_SAMPLER picks the sampler.
//
// withPrometheus adds a reader of the metrics, whatever the OTLP settings,
// that t.metrics serves in the Prometheus text format (prometheus.go).
func setupTelemetry(ctx context.Context, getenv func(string) string, log *slog.Logger, opts ...telemetryOption) (*telemetry, error) {
	var o telemetryOptions
	for _, opt := range opts {
		opt(&o)
	}
	t := &telemetry{tracer: tracenoop.NewTracerProvider(), meter: metricnoop.NewMeterProvider()}
	if otelsetup.Disabled(getenv) {
		return t, nil
	}
	traces, err := otelsetup.ExporterWanted(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	metrics, err := otelsetup.ExporterWanted(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	if !traces && !metrics && !o.prometheus {
		return t, nil
	}
	if err := otelsetup.CheckProtocol(getenv); err != nil {
		return nil, err
	}
	res, err := otelsetup.Resource(ctx, "convstream-worker")
	if err != nil {
		return nil, err
	}
	if traces {
		tr, err := otelsetup.Traces(ctx, getenv, log, res)
		if err != nil {
			return nil, err
		}
		t.tracer = tr.Provider
		t.shutdown = append(t.shutdown, tr.Shutdown)
		log.Info("exporting traces over OTLP/HTTP")
	}
	var readers []sdkmetric.Reader
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(otelsetup.LogMetricErrors(exp, log), runtimeProducer()))
		log.Info("exporting metrics over OTLP/HTTP")
	}
	if o.prometheus {
		reader, handler, err := otelsetup.Prometheus(o.scopeLabels)
		if err != nil {
			return nil, err
		}
		readers = append(readers, reader)
		t.metrics = handler
	}
	if len(readers) > 0 {
		mp, err := meterProvider(res, readers...)
		if err != nil {
			return nil, err
		}
		t.meter = mp
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	return t, nil
}

// meterProvider returns the provider of the worker's metrics, read by
// readers (made with runtimeProducer), which also report the Go runtime's:
// go.memory.used, go.memory.allocated, go.memory.gc.goal, go.config.gogc,
// go.goroutine.count and the like, and go.schedule.duration, how long
// goroutines waited for a thread. A latency tail on a busy host shows
// there: the collector's marks and a want of cores (BENCHMARKS.md).
func meterProvider(res *resource.Resource, readers ...sdkmetric.Reader) (*sdkmetric.MeterProvider, error) {
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	if err := otelruntime.Start(otelruntime.WithMeterProvider(mp)); err != nil {
		return nil, fmt.Errorf("runtime metrics: %w", err)
	}
	return mp, nil
}

// runtimeProducer is the reader option that adds the runtime's histograms
// (go.schedule.duration) to what a reader collects.
func runtimeProducer() sdkmetric.ReaderOption {
	return sdkmetric.WithProducer(otelruntime.NewProducer())
}

// close flushes and stops the exporters.
func (t *telemetry) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
