package streams

import (
	"context"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Doctor asks a worker for the diagnosis of a conversation's stored
// messages: the reply is a TypeDoctorDiagnosis event (a DoctorDiagnosis),
// or a TypeEventRejected one.
func (c *Client) Doctor(ctx context.Context, conversationID string, opts ...SendOption) (*event.Event, error) {
	if !ValidConversationID(conversationID) {
		return nil, fmt.Errorf("%w: conversation id %q", ErrInvalidConfig, conversationID)
	}
	o := sendOpts(opts)
	subject := c.subjects.Doctor(conversationID)
	ctx, span := c.tracer.Start(ctx, "doctor", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", "request"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", o.id),
			attribute.String("convstream.conversation_id", conversationID),
		))
	defer span.End()
	msg, err := c.message(ctx, o, subject, TypeDoctorRequested, conversationID, DoctorRequest{ConversationID: conversationID})
	if err != nil {
		return nil, fail(span, err)
	}
	reply, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return nil, fail(span, fmt.Errorf("streams: doctor request: %w", err))
	}
	out, err := DecodeEvent(reply.Header, reply.Data)
	if err != nil {
		return nil, fail(span, fmt.Errorf("streams: doctor reply is not a CloudEvent (%s): %w", reply.Header.Get("Nats-Service-Error"), err))
	}
	span.SetAttributes(attribute.String("cloudevents.event_type", out.Type()))
	return out, nil
}
