package streams

import (
	"context"
	"errors"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"

	"github.com/convstream/convstream/conversation"
)

// validate checks what decode read against the contract: an event type the
// stream accepts, a conversationid that matches the subject, data that is
// a JSON object (JSON or msgpack) with a string id. On success d.data holds
// the decoded data, or d.message an append's message (canonicalAppend).
func (w *Worker) validate(_ context.Context, d *delivery) error {
	if d.decodeErr != nil {
		return d.decodeErr
	}
	ev := d.event
	if !isEventType(ev.Type()) {
		return reject(CodeUnknownType, "unknown event type %q", ev.Type())
	}
	if err := checkConversation(ev, d.conversationID, true); err != nil {
		return err
	}
	if ev.Type() == TypeMessageAppended {
		if m := canonicalAppend(ev); m != nil {
			d.message = m
			return nil
		}
	}
	data, err := decodeData(ev)
	if err != nil {
		if errors.Is(err, errUnsupportedContentType) {
			return rejectErr(CodeContentType, err)
		}
		var de *dataError
		if errors.As(err, &de) {
			return rejectAt(CodeBadData, dataPath(de.path), "%s", de.msg)
		}
		return reject(CodeBadData, "data: %v", err)
	}
	if id, ok := data["id"].(string); !ok || id == "" {
		return reject(CodeMissingID, "data has no string \"id\"")
	}
	for _, k := range []string{"id", "parentId"} {
		if s, ok := data[k].(string); ok && hasControl(s) {
			return reject(CodeInvalidData, "%s %q holds control characters", k, s)
		}
	}
	if err := checkShape(ev.Type(), data); err != nil {
		return err
	}
	d.data = data
	return nil
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
// would refuse, which decodeData then decodes, or refuses, as usual.
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

// checkConversation requires the conversationid extension of ev, when
// present (or when required), to equal id, the subject's.
func checkConversation(ev *event.Event, id string, required bool) *RejectError {
	v, ok := extension(ev, ExtConversationID)
	if !ok {
		if required {
			return reject(CodeBadConversation, "missing extension attribute %q", ExtConversationID)
		}
		return nil
	}
	s, err := types.ToString(v)
	if err != nil || s != id {
		return reject(CodeBadConversation, "conversationid %q does not match subject conversation %q", s, id)
	}
	return nil
}
