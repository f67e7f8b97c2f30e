package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// instrumentationName names the tracer and meter of this package.
const instrumentationName = "github.com/convstream/convstream/streams"

// propagator reads and writes W3C trace context; on CloudEvents it uses the
// distributed-tracing extension (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// eventCarrier adapts a CloudEvent's extensions to propagation.TextMapCarrier.
type eventCarrier struct{ ev *event.Event }

func (c eventCarrier) Get(key string) string {
	v, ok := extension(c.ev, key)
	if !ok {
		return ""
	}
	s, _ := types.ToString(v)
	return s
}

func (c eventCarrier) Set(key, value string) { c.ev.SetExtension(key, value) }

func (c eventCarrier) Keys() []string {
	keys := make([]string, 0, len(c.ev.Extensions()))
	for k := range c.ev.Extensions() {
		keys = append(keys, k)
	}
	return keys
}

// InjectTraceContext writes the span context of ctx into ev's traceparent
// and tracestate extension attributes.
func InjectTraceContext(ctx context.Context, ev *event.Event) {
	propagator.Inject(ctx, eventCarrier{ev})
}

// ExtractTraceContext returns ctx with the remote span context carried by
// ev's traceparent and tracestate, if any.
func ExtractTraceContext(ctx context.Context, ev *event.Event) context.Context {
	if ev == nil {
		return ctx
	}
	return propagator.Extract(ctx, eventCarrier{ev})
}

func (w *Worker) inject(ctx context.Context, ev *event.Event) { InjectTraceContext(ctx, ev) }

// tracing starts a consumer span per delivery, a child of the span that
// published the event when the event carries trace context.
func (w *Worker) tracing(next handlerFunc) handlerFunc {
	return func(ctx context.Context, d *delivery) error {
		if !w.traced {
			// No span to record (the default): the event's trace context
			// still goes on to what the event causes, without building the
			// span's attributes (about 2% of the worker's CPU).
			if d.event != nil {
				ctx = ExtractTraceContext(ctx, d.event)
			}
			return next(ctx, d)
		}
		typ := "unknown"
		if d.event != nil {
			typ = d.event.Type()
			ctx = ExtractTraceContext(ctx, d.event)
		}
		ctx, span := w.tracer.Start(ctx, "process "+typ,
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
		var re *RejectError
		switch {
		case errors.As(err, &re):
			span.SetAttributes(attribute.String("convstream.reject_code", re.Code), attribute.String("error.type", re.Code))
			span.SetStatus(codes.Error, re.Error())
		case err != nil:
			span.SetAttributes(attribute.String("error.type", errorType(err)))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		return err
	}
}

// traced reports whether tp records spans: whether it is not the no-op
// provider the worker defaults to.
func traced(tp trace.TracerProvider) bool {
	_, noop := tp.(tracenoop.TracerProvider)
	return !noop
}

// errorType is the error.type attribute of a failed span, a value of few
// kinds as the semantic conventions ask: a rejection's code, a name for the
// failures a client meets (no responder, no stream, a timeout), else the Go
// type of the innermost error (TestErrorType).
func errorType(err error) string {
	var re *RejectError
	switch {
	case errors.As(err, &re):
		return re.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, nats.ErrNoResponders):
		return "no_responders"
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		return "no_stream_response"
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return fmt.Sprintf("%T", err)
}
