package streams

import (
	"context"
	"errors"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// validate checks what decode read against the contract: an event type the
// stream accepts, a conversationid that matches the subject, data that is
// a JSON object (JSON or msgpack) with a string id. On success d.data holds
// the decoded data.
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
	data, err := decodeData(ev)
	if err != nil {
		if errors.Is(err, errUnsupportedContentType) {
			return rejectErr(CodeContentType, err)
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
	d.data = data
	return nil
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
