package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/streams"
)

// processorObserver gives every processor of a pipeline run a child span of
// the run's span and records its duration. It keeps no state: the span
// travels in the context the engine hands back.
type processorObserver struct {
	tracer trace.Tracer
	ins    *instruments
}

var _ enginecore.Observer = processorObserver{}

func (o processorObserver) ProcessorStarted(ctx context.Context, name string) context.Context {
	ctx, _ = o.tracer.Start(ctx, "processor "+name, trace.WithAttributes(attribute.String("convstream.processor", name)))
	return ctx
}

func (o processorObserver) ProcessorFinished(ctx context.Context, name string, elapsed time.Duration, err error) {
	span := trace.SpanFromContext(ctx)
	if err != nil {
		span.SetAttributes(attribute.String("error.type", streams.ErrorType(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	o.ins.processorDuration.Record(ctx, elapsed.Seconds(), metric.WithAttributes(
		attribute.String("processor", name), attribute.Bool("error", err != nil)))
}
