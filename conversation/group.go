package conversation

import (
	"encoding/json"
	"fmt"
)

// MessageGroup describes a group of messages shown together, such as the
// columns of a side-by-side model comparison. Like Message it keeps the JSON
// object it was built from.
type MessageGroup struct {
	fields map[string]any
	id     key
	mode   any
	hasMod bool
}

// NewMessageGroup builds a MessageGroup from a decoded JSON object. The map
// is owned by the group afterwards.
func NewMessageGroup(fields map[string]any) (*MessageGroup, error) {
	if fields == nil {
		return nil, fmt.Errorf("%w: message group is not a JSON object", ErrInvalidMessage)
	}
	g := &MessageGroup{fields: fields, id: keyOf(fields, "id")}
	g.mode, g.hasMod = fields["mode"]
	return g, nil
}

// ID returns the group id, or "" when it is not a string.
func (g *MessageGroup) ID() string { return g.id.s }

// Mode returns the group's presentation mode ("compare", "summary", "manual").
func (g *MessageGroup) Mode() string {
	s, _ := g.mode.(string)
	return s
}

// Fields returns every field of the group. Callers must treat it as read-only.
func (g *MessageGroup) Fields() map[string]any { return g.fields }

// MarshalJSON encodes the group as its JSON object.
func (g *MessageGroup) MarshalJSON() ([]byte, error) { return json.Marshal(g.fields) }

// UnmarshalJSON decodes a JSON object into the group.
func (g *MessageGroup) UnmarshalJSON(data []byte) error {
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%w: message group: %w", ErrInvalidMessage, err)
	}
	n, err := NewMessageGroup(f)
	if err != nil {
		return err
	}
	*g = *n
	return nil
}
