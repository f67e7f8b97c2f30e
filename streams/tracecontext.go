package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
)

// InstrumentationName names the tracer and meter of this package.
const InstrumentationName = "github.com/convstream/convstream/streams"

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

// ErrorType is the error.type attribute of a failed span, a value of few
// kinds as the semantic conventions ask: a rejection's code, a name for the
// failures a client meets (no responder, no stream, a timeout), else the Go
// type of the innermost error (TestErrorType).
func ErrorType(err error) string {
	var re *RejectError
	switch {
	case errors.As(err, &re):
		return string(re.Code)
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
