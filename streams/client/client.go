package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/convstream/convstream/streams"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Client publishes events, requests inference and reads snapshots: the
// producer side of the contract, used by convctl and the tests.
type Client struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	subjects streams.Subjects
	source   string
	tracer   trace.Tracer
}

// Option configures a Client.
type Option func(*Client)

// WithSubjects sets the subject prefix (default DefaultPrefix).
func WithSubjects(s streams.Subjects) Option { return func(c *Client) { c.subjects = s } }

// WithSource sets the CloudEvents source of what the client sends.
func WithSource(source string) Option { return func(c *Client) { c.source = source } }

// WithTracerProvider makes the client start a span per send and
// request and carry its trace context in the event.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *Client) {
		if tp != nil {
			c.tracer = tp.Tracer(streams.InstrumentationName)
		}
	}
}

// New returns a client over nc.
func New(nc *nats.Conn, opts ...Option) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	s, _ := streams.NewSubjects(streams.DefaultPrefix)
	c := &Client{nc: nc, js: js, subjects: s, source: "urn:convstream:client",
		tracer: tracenoop.NewTracerProvider().Tracer(streams.InstrumentationName)}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// SendOption configures one event sent by a Client.
type SendOption func(*sendOptions)

type sendOptions struct {
	id          string
	mode        streams.Mode
	contentType string
}

// WithEventID sets the event id (default: a random UUID). Sending twice
// with the same id within DuplicateWindow stores the event once.
func WithEventID(id string) SendOption { return func(o *sendOptions) { o.id = id } }

// WithMode sets the content mode (default Structured).
func WithMode(m streams.Mode) SendOption { return func(o *sendOptions) { o.mode = m } }

// WithContentType sets the data encoding: ContentTypeJSON (default) or
// ContentTypeMsgpack.
func WithContentType(ct string) SendOption { return func(o *sendOptions) { o.contentType = ct } }

func sendOpts(opts []SendOption) sendOptions {
	o := sendOptions{mode: streams.Structured, contentType: streams.ContentTypeJSON}
	for _, opt := range opts {
		opt(&o)
	}
	if o.id == "" {
		o.id = uuid.NewString()
	}
	return o
}

// Sent describes a stored event.
type Sent struct {
	EventID  string
	Sequence uint64
	// Duplicate is true when JetStream already held an event with this id.
	Duplicate bool
}

// Send publishes an event of type typ (one of EventTypes()) about a
// conversation and waits until JetStream has stored it.
func (c *Client) Send(ctx context.Context, conversationID, typ string, data any, opts ...SendOption) (*Sent, error) {
	return c.sendTo(ctx, c.subjects.Events(conversationID), conversationID, typ, data, opts)
}

// sendTo publishes an event about a conversation on subject, a subject of
// a stream, and waits until JetStream has stored it.
func (c *Client) sendTo(ctx context.Context, subject, conversationID, typ string, data any, opts []SendOption) (*Sent, error) {
	if err := checkConversationID(conversationID); err != nil {
		return nil, err
	}
	o := sendOpts(opts)
	ctx, span := c.tracer.Start(ctx, "send "+typ, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", "publish"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", o.id),
			attribute.String("convstream.conversation_id", conversationID),
		))
	defer span.End()
	msg, err := c.message(ctx, o, subject, typ, conversationID, data)
	if err != nil {
		return nil, fail(span, err)
	}
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fail(span, fmt.Errorf("client: send %s: %w", typ, err))
	}
	span.SetAttributes(attribute.Int64("messaging.nats.stream_sequence", int64(ack.Sequence)))
	return &Sent{EventID: o.id, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// message builds the CloudEvent of a send or an inference request, with
// the trace context of ctx, as a NATS message to subject.
// Message returns the NATS message that Send would publish for an event
// of type typ about conversationID, on subject, without publishing it:
// for a caller that publishes by itself (in a batch, or with its own
// publish options).
func (c *Client) Message(ctx context.Context, subject, typ, conversationID string, data any, opts ...SendOption) (*nats.Msg, error) {
	return c.message(ctx, sendOpts(opts), subject, typ, conversationID, data)
}

// Subjects returns the subjects the client uses.
func (c *Client) Subjects() streams.Subjects { return c.subjects }

// Conn returns the client's NATS connection.
func (c *Client) Conn() *nats.Conn { return c.nc }

// JetStream returns the client's JetStream context.
func (c *Client) JetStream() jetstream.JetStream { return c.js }

func (c *Client) message(ctx context.Context, o sendOptions, subject, typ, conversationID string, data any) (*nats.Msg, error) {
	ev, err := streams.NewEventAs(o.id, typ, c.source, conversationID, o.contentType, data)
	if err != nil {
		return nil, err
	}
	streams.InjectTraceContext(ctx, ev)
	return streams.EncodeEvent(subject, ev, o.mode)
}

// Infer asks the worker for the context of a conversation and returns the
// reply: an event of type TypeInferenceContext, TypePipelineFailed or
// TypeEventRejected. Decode its data with DataAs.
func (c *Client) Infer(ctx context.Context, req streams.InferenceRequest, opts ...SendOption) (*event.Event, error) {
	return c.request(ctx, "infer", "inference", c.subjects.Inference(req.ConversationID), streams.TypeInferenceRequested, req.ConversationID, req, opts)
}

// request sends a request event of type typ about conversation conv to
// subject and returns the reply, a CloudEvent, in a client span named
// name; what names the request in errors.
func (c *Client) request(ctx context.Context, name, what, subject, typ, conv string, data any, opts []SendOption) (*event.Event, error) {
	if err := checkConversationID(conv); err != nil {
		return nil, err
	}
	o := sendOpts(opts)
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", "request"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", o.id),
			attribute.String("convstream.conversation_id", conv),
		))
	defer span.End()
	msg, err := c.message(ctx, o, subject, typ, conv, data)
	if err != nil {
		return nil, fail(span, err)
	}
	reply, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return nil, fail(span, fmt.Errorf("client: %s request: %w", what, err))
	}
	out, err := streams.DecodeEvent(reply.Header, reply.Data)
	if err != nil {
		desc := reply.Header.Get("Nats-Service-Error")
		return nil, fail(span, fmt.Errorf("client: %s reply is not a CloudEvent (%s): %w", what, desc, err))
	}
	span.SetAttributes(attribute.String("cloudevents.event_type", out.Type()))
	return out, nil
}

// Snapshot returns the stored snapshot of a conversation, or an error
// wrapping ErrUnknownConversation (none stored) or ErrNewerFormat (one this
// release cannot read).
func (c *Client) Snapshot(ctx context.Context, conversationID string) (*streams.Snapshot, error) {
	if err := checkConversationID(conversationID); err != nil {
		return nil, err
	}
	kv, err := c.js.KeyValue(ctx, c.subjects.SnapshotBucket())
	if err != nil {
		return nil, fmt.Errorf("client: snapshot bucket: %w", err)
	}
	e, err := kv.Get(ctx, conversationID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", streams.ErrUnknownConversation, conversationID)
	}
	if err != nil {
		return nil, fmt.Errorf("client: snapshot %s: %w", conversationID, err)
	}
	s, err := decodeSnapshot(e.Value())
	if err != nil {
		return nil, fmt.Errorf("client: snapshot %s: %w", conversationID, err)
	}
	return s, nil
}

// decodeSnapshot reads a value of the snapshot bucket: an error for one
// that is not a snapshot this release reads (malformed, or of a newer
// format: ErrNewerFormat).
func decodeSnapshot(data []byte) (*streams.Snapshot, error) {
	var s streams.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if err := streams.CheckSnapshotFormat(s.Format); err != nil {
		return nil, err
	}
	return &s, nil
}

// checkConversationID refuses an id that cannot name a conversation
// (streams.ValidConversationID): "*" or ">" would become a wildcard in a
// subject or a key and read or follow every conversation's data
// (TestClientRefusesWildcards).
func checkConversationID(id string) error {
	if !streams.ValidConversationID(id) {
		return fmt.Errorf("%w: conversation id %q: want 1 to 128 characters from [A-Za-z0-9_-]", streams.ErrInvalidConfig, id)
	}
	return nil
}

func fail(span trace.Span, err error) error {
	span.SetAttributes(attribute.String("error.type", streams.ErrorType(err)))
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	return err
}
