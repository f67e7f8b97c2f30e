package client

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/convstream/convstream/streams"
)

// StartReply appends message, an assistant message being written, to a
// conversation: its streamStatus is set to streaming (message itself is
// not modified). Chunks (SendChunk) then add to it and Complete ends it.
func (c *Client) StartReply(ctx context.Context, conversationID string, message map[string]any, opts ...SendOption) (*Sent, error) {
	m := maps.Clone(message)
	if m == nil {
		m = map[string]any{}
	}
	m[streams.FieldStreamStatus] = streams.StreamStreaming
	if _, ok := m["content"]; !ok {
		m["content"] = ""
	}
	return c.Send(ctx, conversationID, streams.TypeMessageAppended, m, opts...)
}

// SendChunk publishes the next chunk of a streaming message on the
// conversation's chunks subject and waits until JetStream has stored it.
// The worker refuses a chunk whose Seq is not the next one
// (CodeChunkOutOfOrder) or whose message is not streaming
// (CodeNotStreaming), on the errors subject.
func (c *Client) SendChunk(ctx context.Context, conversationID string, chunk streams.MessageChunk, opts ...SendOption) (*Sent, error) {
	if chunk.ID == "" || chunk.Seq < 1 {
		return nil, fmt.Errorf("%w: chunk needs a message id and a seq from 1", streams.ErrInvalidConfig)
	}
	return c.sendTo(ctx, c.subjects.Chunks(conversationID), conversationID, streams.TypeMessageChunk, chunk, opts)
}

// Complete ends a streaming message with its final fields (the whole
// content included) and waits until JetStream has stored the event.
func (c *Client) Complete(ctx context.Context, conversationID string, done streams.MessageCompleted, opts ...SendOption) (*Sent, error) {
	if done.ID == "" {
		return nil, fmt.Errorf("%w: completion needs a message id", streams.ErrInvalidConfig)
	}
	return c.Send(ctx, conversationID, streams.TypeMessageCompleted, done, opts...)
}

// RequestReply asks an orchestrator for an assistant's reply: it stores a
// TypeReplyRequested on the conversation's replies subject, in the replies
// stream (which the orchestrator provisions).
func (c *Client) RequestReply(ctx context.Context, req streams.ReplyRequest, opts ...SendOption) (*Sent, error) {
	return c.sendTo(ctx, c.subjects.Replies(req.ConversationID), req.ConversationID, streams.TypeReplyRequested, req, opts)
}

// StopReply asks the orchestrator writing message id of a conversation to
// stop, and returns its answer. A reply the stored snapshot shows ended is
// answered at once with streams.ErrNotStreaming, since no orchestrator
// writes it (TestStopEndedReply); one the snapshot does not hold yet may be
// being written, so the request goes out.
func (c *Client) StopReply(ctx context.Context, conversationID, id string, opts ...SendOption) (*event.Event, error) {
	if status, ok := c.streamStatus(ctx, conversationID, id); ok && status != streams.StreamStreaming {
		return nil, fmt.Errorf("%w: message %s of %s is not being written (stream status %q)", streams.ErrNotStreaming, id, conversationID, status)
	}
	return c.request(ctx, "stop", "stop", c.subjects.Stop(conversationID), streams.TypeReplyStop, conversationID, streams.ReplyStop{ID: id}, opts)
}

// streamStatus returns the stream status of message id in the stored
// snapshot of a conversation ("" for a message not streamed), and whether
// the snapshot holds the message.
func (c *Client) streamStatus(ctx context.Context, conversationID, id string) (string, bool) {
	s, err := c.Snapshot(ctx, conversationID)
	if err != nil {
		return "", false
	}
	var list []struct {
		ID     string `json:"id"`
		Status string `json:"streamStatus"`
	}
	if json.Unmarshal(s.FlatList, &list) != nil {
		return "", false
	}
	for _, m := range list {
		if m.ID == id {
			return m.Status, true
		}
	}
	return "", false
}
