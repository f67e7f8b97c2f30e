package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/convstream/convstream/conversation"
)

// ErrUnsupportedContentType is returned by DecodeData for media types other
// than JSON and msgpack.
var ErrUnsupportedContentType = errors.New("unsupported datacontenttype")

// mediaType returns the bare media type of a datacontenttype; an absent
// one means JSON, as the JSON event format says.
func mediaType(ct string) (string, error) {
	switch ct {
	case "", ContentTypeJSON:
		return ContentTypeJSON, nil
	case ContentTypeMsgpack:
		return ContentTypeMsgpack, nil // the common cases need no parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrUnsupportedContentType, ct, err)
	}
	switch mt {
	case ContentTypeJSON, "text/json":
		return ContentTypeJSON, nil
	case ContentTypeMsgpack, "application/x-msgpack", "application/vnd.msgpack":
		return ContentTypeMsgpack, nil
	}
	return "", fmt.Errorf("%w %q (want %s or %s)", ErrUnsupportedContentType, ct, ContentTypeJSON, ContentTypeMsgpack)
}

// DecodeData decodes an event's data into a JSON object as encoding/json
// would produce it (float64 numbers, map[string]any objects, []any arrays).
// msgpack data is converted through JSON so that both encodings yield the
// same values: integers become numbers, binary becomes base64 text,
// timestamps become RFC 3339 text.
func DecodeData(ev *event.Event) (map[string]any, error) {
	mt, err := mediaType(ev.DataContentType())
	if err != nil {
		return nil, err
	}
	raw := ev.Data()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("no data")
	}
	if mt == ContentTypeMsgpack {
		if err := checkMsgpackData(raw); err != nil {
			return nil, fmt.Errorf("invalid msgpack: %w", err)
		}
		// Map keys must be strings, as in JSON; msgpack's default decoder
		// refuses others.
		var v any
		if err := msgpack.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("invalid msgpack: %w", err)
		}
		if raw, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("msgpack data has no JSON form: %w", err)
		}
	}
	if err := checkJSONData(raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	obj, err := conversation.DecodeFields(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if obj == nil {
		return nil, errors.New("data is not a JSON object")
	}
	return obj, nil
}

// encodeData encodes v as event data of media type mt.
func encodeData(mt string, v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok && mt == ContentTypeJSON {
		return raw, nil
	}
	if mt == ContentTypeMsgpack {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.SetCustomStructTag("json")
		enc.UseCompactInts(true)
		// Go through JSON first so that MarshalJSON methods (messages,
		// stats) shape the value as they do on the JSON wire.
		j, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var generic any
		if err := json.Unmarshal(j, &generic); err != nil {
			return nil, err
		}
		if err := enc.Encode(generic); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return json.Marshal(v)
}

// NewEvent builds a CloudEvent of the contract. data is encoded as JSON
// unless it is already a json.RawMessage.
func NewEvent(id, typ, source, conversationID string, data any) (*event.Event, error) {
	return NewEventAs(id, typ, source, conversationID, ContentTypeJSON, data)
}

func NewEventAs(id, typ, source, conversationID, mt string, data any) (*event.Event, error) {
	ev := event.New()
	ev.SetID(id)
	ev.SetType(typ)
	ev.SetSource(source)
	ev.SetTime(time.Now().UTC())
	if conversationID != "" {
		ev.SetExtension(ExtConversationID, conversationID)
	}
	raw, err := encodeData(mt, data)
	if err != nil {
		return nil, fmt.Errorf("streams: encode %s data: %w", typ, err)
	}
	// Set the encoded bytes directly: SetData would mark any []byte as
	// binary, which the JSON event format then writes as data_base64.
	ev.SetDataContentType(mt)
	ev.DataEncoded = raw
	ev.DataBase64 = mt != ContentTypeJSON
	return &ev, nil
}
