package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// StoredError is a report kept in the errors stream: a
// convstream.event.rejected.v1, convstream.pipeline.failed.v1 or
// convstream.event.deadlettered.v1 event.
type StoredError struct {
	// Sequence is the report's sequence in the errors stream.
	Sequence uint64
	// Stored is when the errors stream stored it.
	Stored time.Time
	Event  *event.Event
}

// Errors returns the reports the errors stream keeps for a conversation
// (UnknownConversation: those of events naming no usable conversation),
// oldest first, as far as its retention limits keep them; none, without
// an error, when there are none. It reads them one direct get each (the
// stream's next message on the conversation's errors subject), which
// leaves nothing behind on the server: at most the stream's
// per-conversation limit of them (DefaultErrorsMaxPerConversation).
func (c *Client) Errors(ctx context.Context, conversationID string) ([]StoredError, error) {
	if conversationID != streams.UnknownConversation && !streams.ValidConversationID(conversationID) {
		return nil, fmt.Errorf("%w: conversation id %q", streams.ErrInvalidConfig, conversationID)
	}
	name, subject := c.subjects.ErrorsStream(), c.subjects.Errors(conversationID)
	stream, err := c.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("client: errors stream %s: %w", name, err)
	}
	var out []StoredError
	for seq := uint64(1); ; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("client: read %s: %w", subject, err)
		}
		seq = m.Sequence + 1
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		if err != nil {
			continue // not the worker's: published on the subject by hand
		}
		out = append(out, StoredError{Sequence: m.Sequence, Stored: m.Time, Event: ev})
	}
}
