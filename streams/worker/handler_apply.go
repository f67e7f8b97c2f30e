package worker

import (
	"context"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// apply loads the conversation of d and applies d's event to it. A
// redelivered event is settled as skipped. The conversation refuses an
// event before changing anything, so a rejection leaves the state as it
// was.
func (w *Worker) apply(ctx context.Context, d *delivery) error {
	st, skip, err := w.stateForEvent(ctx, d.lane, d.conversationID, d.seq, d.gaps, d.preload)
	if err != nil {
		return err
	}
	if skip {
		d.outcome = skipped
		if st != nil && d.seq > st.storedSeq {
			// Redelivered before its store: acknowledged with it.
			d.state, d.unstored = st, true
		}
		return nil
	}
	d.state = st
	d.undo = undoFor(st.conv, st.live, d.event.Type(), d.data, d.message)
	if err := applyEvent(st.conv, &st.live, d.event.Type(), d.data, d.message); err != nil {
		return err
	}
	if d.event.Type() == streams.TypeMessageCompleted {
		w.purgeChunks(ctx, st.id, d.seq)
	}
	if len(st.live) > 0 {
		w.replies.touch(st.id, d.lane)
	}
	d.dirty = true
	if redelivered(d) {
		// A redelivery comes after AckWait, out of stream order: later
		// events of this conversation may have been handed to a worker that
		// died and be awaiting redelivery too. The next event applied to
		// this state checks that it is the next one (else the state is
		// rebuilt past the missing ones) instead of trusting the cache.
		st.unverified = true
	}
	return nil
}

// redelivered reports whether JetStream delivered d before.
func redelivered(d *delivery) bool { return d.delivered > 1 }

// applyEvent changes conv as an event of type typ with data says. data has
// been validated: it is an object with a string id; or, for an append, m
// is its message (validate built it) and data is nil.
func applyEvent(conv *conversation.Conversation, live *liveReplies, typ string, data map[string]any, m *conversation.Message) error {
	id, _ := data["id"].(string)
	var err error
	switch typ {
	case streams.TypeMessageAppended:
		if m == nil {
			m, err = conversation.NewMessage(data)
		}
		if err == nil {
			err = conv.Append(m)
		}
		if err == nil {
			live.startReply(m.ID(), m, data)
		}
	case streams.TypeMessageUpdated:
		if r := (*live)[id]; r != nil {
			// An update of a reply being written applies to its text so far.
			if err = fold(conv, id, r); err != nil {
				return err
			}
		}
		err = conv.Update(id, data)
		if s, ok := data[streams.FieldStreamStatus]; ok && s != streams.StreamStreaming && err == nil {
			live.end(id)
		}
	case streams.TypeMessageDeleted:
		err = conv.Delete(id)
		if err == nil {
			live.end(id)
		}
	case streams.TypeMessageChunk:
		return applyChunk(conv, *live, data)
	case streams.TypeMessageCompleted:
		return applyCompleted(conv, *live, data)
	case streams.TypeGroupsUpserted:
		var g *conversation.MessageGroup
		if g, err = conversation.NewMessageGroup(data); err == nil {
			err = conv.UpsertGroup(g)
		}
	default:
		return streams.Reject(streams.CodeUnknownType, "unknown event type %q", typ)
	}
	if err == nil {
		return nil
	}
	return streams.RejectionOf(err)
}
