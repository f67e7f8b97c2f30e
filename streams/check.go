package streams

import (
	"errors"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/convstream/convstream/conversation"
)

// CheckEvent checks a message event read from the subject of conversation
// id against the contract: an event type the events stream accepts
// (EventTypes()), a conversationid extension equal to id, and data that is a
// JSON object (JSON or msgpack) with a string "id" and fields of the types
// the schemas give them. It returns the decoded data or, for an append
// whose JSON data is already in a message's form, the message itself
// without decoding it into a map; or the *RejectError that names what is
// wrong.
func CheckEvent(ev *event.Event, id string) (data map[string]any, m *conversation.Message, rej *RejectError) {
	if !isEventType(ev.Type()) {
		return nil, nil, Reject(CodeUnknownType, "unknown event type %q", ev.Type())
	}
	if err := CheckConversation(ev, id, true); err != nil {
		return nil, nil, err
	}
	if ev.Type() == TypeMessageAppended {
		if m := canonicalAppend(ev); m != nil {
			return nil, m, nil
		}
	}
	data, err := DecodeData(ev)
	if err != nil {
		if errors.Is(err, ErrUnsupportedContentType) {
			return nil, nil, RejectErr(CodeContentType, err)
		}
		var de *dataError
		if errors.As(err, &de) {
			return nil, nil, RejectAt(CodeBadData, dataPath(de.path), "%s", de.msg)
		}
		return nil, nil, Reject(CodeBadData, "data: %v", err)
	}
	if id, ok := data["id"].(string); !ok || id == "" {
		return nil, nil, Reject(CodeMissingID, "data has no string \"id\"")
	}
	for _, k := range []string{"id", "parentId"} {
		if s, ok := data[k].(string); ok && hasControl(s) {
			return nil, nil, Reject(CodeInvalidData, "%s %q holds control characters", k, s)
		}
	}
	if err := checkShape(ev.Type(), data); err != nil {
		return nil, nil, err
	}
	return data, nil, nil
}

// dataPath returns the path of a field of event data, as dataWalk.path
// writes it ("" for the data itself), from the event.
func dataPath(p string) string {
	if p == "" || p[0] == '[' {
		return "data" + p
	}
	return "data." + p
}

// canonicalAppend builds the message of an append whose JSON data is in the
// form a message keeps, or differs from it only in the order of its
// members (conversation.CanonicalJSON), without decoding the data into a
// map and encoding it again; nil for any other data, or data validate
// would refuse, which DecodeData then decodes, or refuses, as usual.
func canonicalAppend(ev *event.Event) *conversation.Message {
	if mt, err := mediaType(ev.DataContentType()); err != nil || mt != ContentTypeJSON {
		return nil
	}
	// CanonicalJSON takes only valid UTF-8, nested less deep than
	// MaxDataDepth: what checkJSONData would refuse goes the general way.
	text, ok := conversation.CanonicalJSON(nil, ev.Data())
	if !ok {
		return nil
	}
	// Fields of a type the schema does not give them go the general way
	// too, which names them in its rejection.
	if !appendShapeOK(text) {
		return nil
	}
	m, err := conversation.NewMessageCanonical(text)
	if err != nil || m.ID() == "" || hasControl(m.ID()) {
		return nil
	}
	if p, ok := m.ParentID(); ok && hasControl(p) {
		return nil
	}
	return m
}

// CheckConversation requires the conversationid extension of ev, when
// present (or when required), to equal id, the subject's.
func CheckConversation(ev *event.Event, id string, required bool) *RejectError {
	v, ok := extension(ev, ExtConversationID)
	if !ok {
		if required {
			return Reject(CodeBadConversation, "missing extension attribute %q", ExtConversationID)
		}
		return nil
	}
	s, err := types.ToString(v)
	if err != nil || s != id {
		return Reject(CodeBadConversation, "conversationid %q does not match subject conversation %q", s, id)
	}
	return nil
}
