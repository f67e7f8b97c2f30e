package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
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

// errorsFetchBatch is how many reports one fetch asks for.
const errorsFetchBatch = 256

// Errors returns the reports the errors stream keeps for a conversation
// (UnknownConversation: those of events naming no usable conversation),
// oldest first, as far as its retention limits keep them; none, without
// an error, when there are none. It reads them with an ordered consumer
// filtered on the conversation's errors subject, so it needs no durable
// state on the server.
func (c *Client) Errors(ctx context.Context, conversationID string) ([]StoredError, error) {
	if conversationID != UnknownConversation && !ValidConversationID(conversationID) {
		return nil, fmt.Errorf("%w: conversation id %q", ErrInvalidConfig, conversationID)
	}
	name, subject := c.subjects.ErrorsStream(), c.subjects.Errors(conversationID)
	stream, err := c.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("streams: errors stream %s: %w", name, err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return nil, fmt.Errorf("streams: errors stream %s: %w", name, err)
	}
	count := info.State.Subjects[subject]
	if count == 0 {
		return nil, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("streams: read %s: %w", subject, err)
	}
	out := make([]StoredError, 0, count)
	for {
		batch, err := cons.FetchNoWait(errorsFetchBatch)
		if err != nil {
			return out, fmt.Errorf("streams: read %s: %w", subject, err)
		}
		var pending uint64
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return out, fmt.Errorf("streams: read %s: %w", subject, err)
			}
			pending = meta.NumPending
			ev, err := DecodeEvent(m.Headers(), m.Data())
			if err != nil {
				// Not the worker's: someone published on the subject by hand.
				continue
			}
			out = append(out, StoredError{Sequence: meta.Sequence.Stream, Stored: meta.Timestamp, Event: ev})
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return out, fmt.Errorf("streams: read %s: %w", subject, err)
		}
		// Done when the last report read was the last stored, or when
		// none came (the limits dropped what was counted).
		if got == 0 || pending == 0 {
			return out, nil
		}
	}
}
