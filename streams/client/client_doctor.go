package client

import (
	"context"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/convstream/convstream/streams"
)

// Doctor asks a worker for the diagnosis of a conversation's stored
// messages: the reply is a TypeDoctorDiagnosis event (a DoctorDiagnosis),
// or a TypeEventRejected one.
func (c *Client) Doctor(ctx context.Context, conversationID string, opts ...SendOption) (*event.Event, error) {
	return c.request(ctx, "doctor", "doctor", c.subjects.Doctor(conversationID), streams.TypeDoctorRequested, conversationID,
		streams.DoctorRequest{ConversationID: conversationID}, opts)
}
