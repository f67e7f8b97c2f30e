package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/convstream/convstream/internal/jsvalue"
	"github.com/convstream/convstream/streams"
)

// The worker publishes one snapshot delta per applied event. Building it as
// an SDK event and marshalling it cost more than everything else the
// publication does (an event's maps, the source's URL parse, the JSON
// stream's buffers), so deltas are written straight to the structured JSON
// format here. TestDeltaEnvelope holds the result to the SDK: read back
// with event.Event.UnmarshalJSON it is the event the SDK would have
// written, attribute for attribute. Every other event goes through the SDK.

// eventSource is a CloudEvents source as the SDK writes it.
func eventSource(source string) (string, error) {
	u := types.ParseURIRef(source)
	if u == nil || u.String() == "" {
		return "", fmt.Errorf("%w: source %q is not a URI-reference", streams.ErrInvalidConfig, source)
	}
	return u.String(), nil
}

// traceFields carries the trace context of a delta: propagation's
// TextMapCarrier over the two extension attributes it writes.
type traceFields struct{ parent, state string }

func (t *traceFields) Get(key string) string {
	switch key {
	case "traceparent":
		return t.parent
	case "tracestate":
		return t.state
	}
	return ""
}

func (t *traceFields) Set(key, value string) {
	switch key {
	case "traceparent":
		t.parent = value
	case "tracestate":
		t.state = value
	}
}

func (t *traceFields) Keys() []string { return []string{"traceparent", "tracestate"} }

// deltaMsg returns the structured-mode message of the TypeSnapshotDelta
// event of conversation conv whose data, of about dataSize bytes, is
// written by data, appending to the buffer it is given. source is as
// eventSource returns it. The message and its buffer are scratch's (a
// lane's), valid until its next deltaMsg.
func deltaMsg(ctx context.Context, scratch *deltaScratch, subject, source, id, conv string, now time.Time, dataSize int, data func([]byte) []byte) *nats.Msg {
	return envelope(ctx, scratch, subject, source, id, conv, now, dataSize, data, false)
}

// appendMsg is deltaMsg for the delta of a reply's chunk, which a screen
// receives for every few characters a model writes: only the attributes
// CloudEvents requires, no conversationid (the subject names it), time or
// datacontenttype (JSON, the structured format's default), and no
// Nats-Msg-Id (deltas are core NATS, where nothing reads it).
// BenchmarkLiveReply measures its bytes on the wire.
func appendMsg(ctx context.Context, scratch *deltaScratch, subject, source, id, conv string, dataSize int, data func([]byte) []byte) *nats.Msg {
	return envelope(ctx, scratch, subject, source, id, conv, time.Time{}, dataSize, data, true)
}

// envelope writes a delta's structured event; lean leaves out time,
// datacontenttype and the Nats-Msg-Id header (see appendMsg).
func envelope(ctx context.Context, scratch *deltaScratch, subject, source, id, conv string, now time.Time, dataSize int, data func([]byte) []byte, lean bool) *nats.Msg {
	var tf traceFields
	propagation.TraceContext{}.Inject(ctx, &tf)
	// The envelope's attributes, with room for a trace context: one
	// allocation for the whole event, none when the scratch buffer holds it.
	size := 512 + len(id) + len(source) + len(conv) + dataSize
	var b []byte
	if cap(scratch.buf) >= size {
		b = scratch.buf[:0]
	} else {
		b = make([]byte, 0, size)
	}
	b = append(b, `{"specversion":"`+event.CloudEventsVersionV1+`","id":`...)
	b = jsvalue.AppendJSONString(b, id)
	b = append(b, `,"source":`...)
	b = jsvalue.AppendJSONString(b, source)
	if lean {
		b = append(b, `,"type":"`+streams.TypeSnapshotDelta+`","data":`...)
	} else {
		b = append(b, `,"type":"`+streams.TypeSnapshotDelta+`","datacontenttype":"`+streams.ContentTypeJSON+`","time":"`...)
		b = now.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","data":`...)
	}
	b = data(b)
	// Extensions in name order, as the SDK writes them; a lean one's
	// conversation is its subject's.
	if !lean {
		b = append(b, `,"`+streams.ExtConversationID+`":`...)
		b = jsvalue.AppendJSONString(b, conv)
	}
	if tf.parent != "" {
		b = append(b, `,"traceparent":`...)
		b = jsvalue.AppendJSONString(b, tf.parent)
	}
	if tf.state != "" {
		b = append(b, `,"tracestate":`...)
		b = jsvalue.AppendJSONString(b, tf.state)
	}
	b = append(b, '}')
	if cap(b) <= maxScratch {
		scratch.buf = b
	}
	if lean {
		return scratch.leanMessage(subject, b)
	}
	return scratch.message(subject, id, b)
}

// deltaScratch is a lane's delta message, written over by each delta the
// lane publishes: nats.go copies a message into its write buffer before
// PublishMsg returns. It saves the buffer, the message and its headers of
// every delta: deltaMsg was 9% of the bytes the worker process (server
// included) allocated in a profile at 10,000 events a second, and
// BenchmarkWorkerThroughput/cache=10000 allocated 3% fewer bytes and 1.5%
// fewer objects with it (three runs each).
type deltaScratch struct {
	buf   []byte
	msg   nats.Msg
	msgID []string // the Nats-Msg-Id header's values, set in place
	lean  nats.Msg // appendMsg's, without Nats-Msg-Id
}

// leanMessage returns the scratch message of an append delta.
func (s *deltaScratch) leanMessage(subject string, data []byte) *nats.Msg {
	if s.lean.Header == nil {
		s.lean.Header = nats.Header{streams.HeaderContentType: {streams.ContentTypeCloudEvents}}
	}
	s.lean.Subject, s.lean.Data = subject, data
	return &s.lean
}

// maxScratch is the largest buffer a lane keeps for its deltas: the first
// delta of a long conversation, the whole flat list, is not held on to.
const maxScratch = 64 << 10

// message returns the scratch message with subject, event id and data.
func (s *deltaScratch) message(subject, id string, data []byte) *nats.Msg {
	if s.msg.Header == nil {
		s.msgID = []string{""}
		s.msg.Header = nats.Header{jetstream.MsgIDHeader: s.msgID, streams.HeaderContentType: {streams.ContentTypeCloudEvents}}
	}
	s.msgID[0] = id
	s.msg.Subject, s.msg.Data = subject, data
	return &s.msg
}

// deltaID is the event id of conversation conv's delta to version.
func deltaID(conv string, version uint64) string {
	return "delta:" + conv + ":" + strconv.FormatUint(version, 10)
}
