package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrInvalidInput is returned by DecodeInput for a document that is not a
// conversation.
var ErrInvalidInput = errors.New("conversation: invalid input")

// Input is the document form of a conversation:
// {"messages": [...], "messageGroups": [...]}.
type Input struct {
	Messages      []*Message      `json:"messages"`
	MessageGroups []*MessageGroup `json:"messageGroups,omitempty"`
}

// DecodeInput reads one conversation document from r: either an object
// {"messages": [...], "messageGroups": [...]} or a bare array of messages.
// Entries that are not valid messages make it fail with an error that
// names their index. The messages' structs share one allocation, which
// stays alive while any of them does.
func DecodeInput(r io.Reader) ([]*Message, []*MessageGroup, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: read: %w", ErrInvalidInput, err)
	}
	return DecodeInputBytes(data)
}

// DecodeInputBytes is DecodeInput over a byte slice.
func DecodeInputBytes(data []byte) ([]*Message, []*MessageGroup, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("%w: empty document", ErrInvalidInput)
	}
	var rawMsgs, rawGroups []json.RawMessage
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &rawMsgs); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
	case '{':
		var doc struct {
			Messages      json.RawMessage `json:"messages"`
			MessageGroups json.RawMessage `json:"messageGroups"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
		if len(doc.Messages) == 0 || string(doc.Messages) == "null" {
			return nil, nil, fmt.Errorf("%w: no \"messages\" array", ErrInvalidInput)
		}
		if err := json.Unmarshal(doc.Messages, &rawMsgs); err != nil {
			return nil, nil, fmt.Errorf("%w: messages: %w", ErrInvalidInput, err)
		}
		if len(doc.MessageGroups) > 0 && string(doc.MessageGroups) != "null" {
			if err := json.Unmarshal(doc.MessageGroups, &rawGroups); err != nil {
				return nil, nil, fmt.Errorf("%w: messageGroups: %w", ErrInvalidInput, err)
			}
		}
	default:
		return nil, nil, fmt.Errorf("%w: expected a JSON object or array", ErrInvalidInput)
	}
	msgs := make([]*Message, len(rawMsgs))
	// One array for all: the parser reads the messages in order, and
	// contiguous structs stay apart from the JSON allocated between them.
	slab := make([]Message, len(rawMsgs))
	for i, raw := range rawMsgs {
		m := &slab[i]
		if err := m.UnmarshalJSON(raw); err != nil {
			return nil, nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		msgs[i] = m
	}
	groups := make([]*MessageGroup, len(rawGroups))
	for i, raw := range rawGroups {
		g := new(MessageGroup)
		if err := g.UnmarshalJSON(raw); err != nil {
			return nil, nil, fmt.Errorf("messageGroups[%d]: %w", i, err)
		}
		groups[i] = g
	}
	return msgs, groups, nil
}
