package streams

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/jsvalue"
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
		return "", fmt.Errorf("%w: source %q is not a URI-reference", ErrInvalidConfig, source)
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
// eventSource returns it.
func deltaMsg(ctx context.Context, subject, source, id, conv string, now time.Time, dataSize int, data func([]byte) []byte) *nats.Msg {
	var tf traceFields
	propagator.Inject(ctx, &tf)
	// The envelope's attributes, with room for a trace context: one
	// allocation for the whole event.
	b := make([]byte, 0, 512+len(id)+len(source)+len(conv)+dataSize)
	b = append(b, `{"specversion":"`+event.CloudEventsVersionV1+`","id":`...)
	b = jsvalue.AppendJSONString(b, id)
	b = append(b, `,"source":`...)
	b = jsvalue.AppendJSONString(b, source)
	b = append(b, `,"type":"`+TypeSnapshotDelta+`","datacontenttype":"`+ContentTypeJSON+`","time":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = data(b)
	// Extensions in name order, as the SDK writes them.
	b = append(b, `,"`+ExtConversationID+`":`...)
	b = jsvalue.AppendJSONString(b, conv)
	if tf.parent != "" {
		b = append(b, `,"traceparent":`...)
		b = jsvalue.AppendJSONString(b, tf.parent)
	}
	if tf.state != "" {
		b = append(b, `,"tracestate":`...)
		b = jsvalue.AppendJSONString(b, tf.state)
	}
	b = append(b, '}')
	msg := nats.NewMsg(subject)
	msg.Header.Set(headerMsgID, id)
	msg.Header.Set(headerContentType, ContentTypeCloudEvents)
	msg.Data = b
	return msg
}

// deltaID is the event id of conversation conv's delta to version.
func deltaID(conv string, version uint64) string {
	return "delta:" + conv + ":" + strconv.FormatUint(version, 10)
}
