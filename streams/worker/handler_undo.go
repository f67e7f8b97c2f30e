package worker

import (
	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// An event refused after it changed its conversation (its snapshot over a
// limit, handler_publish.go) is taken back in place: an append's message deleted,
// an update's message restored (unless it is a reply being written).
// Letting the conversation go instead made
// the next event rebuild it from the stored snapshot and the events after
// it, a whole conversation's rebuild for every refusal: at a 256 KB limit,
// 2.8 MB allocated a refusal and the heap at four times its size while
// appends were refused (TestRefusalMemoryBounded, BenchmarkRefusal). A
// delete, a groups upsert, a chunk, a completion or an update of a reply
// being written, rarely refused, still lets the conversation go.

// undoStep is what takes an event's change back: the id of the message an
// append added, or the message an update replaced; neither when the event
// cannot be undone in place (undoable is false) or changes nothing.
type undoStep struct {
	undoable bool
	appended string
	replaced *conversation.Message
}

// undoFor returns how to take back the event of type typ with data (or an
// append's message m) once applied to conv, whose replies being written
// are live. It runs before the event is applied.
func undoFor(conv *conversation.Conversation, live liveReplies, typ string, data map[string]any, m *conversation.Message) undoStep {
	id, _ := data["id"].(string)
	switch typ {
	case streams.TypeMessageAppended:
		if m != nil {
			id = m.ID()
		}
		if _, ok := conv.Get(id); ok {
			return undoStep{undoable: true} // a copy is a no-op, another fails: nothing to take back
		}
		return undoStep{undoable: true, appended: id}
	case streams.TypeMessageUpdated:
		if live[id] != nil {
			return undoStep{} // the update folds the reply's text in
		}
		old, ok := conv.Get(id)
		return undoStep{undoable: ok, replaced: old}
	}
	return undoStep{}
}

// apply takes the event back from conv and its live replies and reports
// whether it could.
func (u undoStep) apply(conv *conversation.Conversation, live liveReplies) bool {
	switch {
	case !u.undoable:
		return false
	case u.replaced != nil:
		return conv.Restore(u.replaced) == nil
	case u.appended != "":
		live.end(u.appended) // an append of a reply being written started it
		return conv.Delete(u.appended) == nil
	}
	return true
}
