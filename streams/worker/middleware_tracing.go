package worker

import (
	"context"
	"errors"

	"github.com/convstream/convstream/streams"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// tracing returns the middleware that starts a consumer span of tracer per
// delivery, a child of the span that published the event when the event
// carries trace context. When traced is false (the tracer records nothing)
// it only passes the event's trace context on (TestTraceLinks,
// TestTraceWithoutTracer).
func tracing(tracer trace.Tracer, traced bool) middleware {
	return func(next handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivery) error {
			if !traced {
				// No span to record (the default): the event's trace context
				// still goes on to what the event causes, without building the
				// span's attributes (about 2% of the worker's CPU).
				if d.event != nil {
					ctx = streams.ExtractTraceContext(ctx, d.event)
				}
				return next(ctx, d)
			}
			typ := "unknown"
			if d.event != nil {
				typ = d.event.Type()
				ctx = streams.ExtractTraceContext(ctx, d.event)
			}
			ctx, span := tracer.Start(ctx, "process "+typ,
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "nats"),
					attribute.String("messaging.operation.name", "process"),
					attribute.String("messaging.operation.type", "process"),
					attribute.String("messaging.destination.name", d.subject),
					attribute.String("messaging.message.id", d.eventID),
					attribute.Int64("messaging.nats.stream_sequence", int64(d.seq)),
					attribute.String("cloudevents.event_type", typ),
					attribute.String("convstream.conversation_id", d.conversationID),
				))
			defer span.End()
			if d.msg != nil {
				if md, err := d.msg.Metadata(); err == nil {
					span.SetAttributes(attribute.String("messaging.consumer.group.name", md.Consumer))
				}
			}
			err := next(ctx, d)
			span.SetAttributes(attribute.String("convstream.outcome", d.outcome.String()))
			if d.version > 0 {
				span.SetAttributes(attribute.Int64("convstream.snapshot_version", int64(d.version)))
			}
			var re *streams.RejectError
			switch {
			case errors.As(err, &re):
				span.SetAttributes(attribute.String("convstream.reject_code", string(re.Code)), attribute.String("error.type", string(re.Code)))
				span.SetStatus(codes.Error, re.Error())
			case err != nil:
				span.SetAttributes(attribute.String("error.type", streams.ErrorType(err)))
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}

// traced reports whether tp records spans: whether it is not the no-op
// provider the worker defaults to.
func traced(tp trace.TracerProvider) bool {
	_, noop := tp.(tracenoop.TracerProvider)
	return !noop
}
