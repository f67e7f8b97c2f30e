package conversation

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// ErrInvalidMessage is returned for a message that cannot take part in a
// conversation: not a JSON object, or without a string id.
var ErrInvalidMessage = errors.New("conversation: invalid message")

// Message is one chat message, kept as the JSON object it arrived as so that
// every field, known or not, passes through untouched. The fields the parser
// reads are decoded once, when the message is built. A Message is immutable:
// methods that change it return a new Message.
type Message struct {
	fields map[string]any

	id         string
	idHash     uint64 // of id, for the index (see idIndex)
	parentHash uint64 // of parentID
	role       string
	parentID   string
	hasParent  bool // parentId is a string (an empty string counts)
	parentNull bool // parentId is absent or null
	inThread   bool // truthy threadId
	groupID    string
	agentID    key
	toolCallID key
	tools      []toolRef
	meta       map[string]any
	createdAt  float64
	updatedAt  float64
	flags      msgFlags
	signal     *signal
}

// msgFlags caches metadata switches that the parser tests often.
type msgFlags uint16

const (
	flagSupervisor   msgFlags = 1 << iota // metadata.orchestrationRole == "supervisor" or truthy isSupervisor
	flagIsSupervisor                      // truthy metadata.isSupervisor (the legacy flag alone)
	flagCompare                           // metadata.compare === true
	flagCouncil                           // metadata.agentCouncil === true
	flagActiveColumn                      // metadata.activeColumn === true
	flagSubAgent                          // metadata.scope == "sub_agent" with a truthy subAgentId
	flagLiftUsage                         // no truthy usage, but a truthy metadata.usage to lift
	flagTrimMeta                          // a tool-using assistant whose metadata the message map trims
)

// toolRef is the part of an assistant's tool call the parser needs.
type toolRef struct {
	id          key
	resultMsgID string // truthy string result_msg_id, or ""
}

// signal is the external-signal lineage kept in metadata.signal.
type signal struct {
	kind            string
	sequence        float64
	hasSequence     bool
	sourceToolCall  any
	hasSourceCall   bool
	sourceToolName  any
	hasSourceName   bool
	sequenceRaw     any
	hasSequenceRaw  bool
	isCallback      bool
	isTaskCompleted bool
}

// NewMessage builds a Message from a decoded JSON object. The map is owned
// by the Message afterwards and must not be changed by the caller. The only
// requirement is a string "id".
func NewMessage(fields map[string]any) (*Message, error) {
	if fields == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	}
	id, ok := fields["id"].(string)
	if !ok {
		if _, present := fields["id"]; !present {
			return nil, fmt.Errorf("%w: missing id", ErrInvalidMessage)
		}
		return nil, fmt.Errorf("%w: id must be a string, got %s", ErrInvalidMessage, jsType(fields["id"]))
	}
	m := &Message{fields: fields, id: id}
	m.index()
	return m, nil
}

// MustMessage is like NewMessage but panics on error. It is meant for tests
// and literals known to be valid.
func MustMessage(fields map[string]any) *Message {
	m, err := NewMessage(fields)
	if err != nil {
		panic(err)
	}
	return m
}

// index decodes the fields the parser reads.
func (m *Message) index() {
	f := m.fields
	m.role, _ = f["role"].(string)
	m.idHash = hashID(m.id)
	switch p := f["parentId"].(type) {
	case string:
		m.parentID, m.hasParent = p, true
		m.parentHash = hashID(p)
	case nil:
		m.parentNull = true
	}
	m.inThread = truthy(f["threadId"])
	m.groupID = truthyString(f["groupId"])
	m.agentID = keyOf(f, "agentId")
	m.toolCallID = keyOf(f, "tool_call_id")
	if tools, ok := f["tools"].([]any); ok && len(tools) > 0 {
		m.tools = make([]toolRef, len(tools))
		for i, t := range tools {
			if obj, ok := t.(map[string]any); ok {
				m.tools[i] = toolRef{id: keyOf(obj, "id"), resultMsgID: truthyString(obj["result_msg_id"])}
			} else {
				m.tools[i] = toolRef{id: key{kind: keyAbsent}}
			}
		}
	}
	m.createdAt = toNumber(f["createdAt"], hasKey(f, "createdAt"))
	m.updatedAt = toNumber(f["updatedAt"], hasKey(f, "updatedAt"))
	m.meta, _ = f["metadata"].(map[string]any)
	if m.role == "assistant" && nonEmptyList(f["tools"]) && truthy(f["metadata"]) {
		m.flags |= flagTrimMeta
	}
	if m.meta == nil {
		return
	}
	md := m.meta
	if md["scope"] == "sub_agent" && truthy(md["subAgentId"]) {
		m.flags |= flagSubAgent
	}
	if truthy(md["usage"]) && !truthy(f["usage"]) {
		m.flags |= flagLiftUsage
	}
	if truthy(md["isSupervisor"]) {
		m.flags |= flagIsSupervisor | flagSupervisor
	}
	if md["orchestrationRole"] == "supervisor" {
		m.flags |= flagSupervisor
	}
	if md["compare"] == true {
		m.flags |= flagCompare
	}
	if md["agentCouncil"] == true {
		m.flags |= flagCouncil
	}
	if md["activeColumn"] == true {
		m.flags |= flagActiveColumn
	}
	if s, ok := md["signal"]; ok && s != nil {
		sig := &signal{}
		if obj, ok := s.(map[string]any); ok {
			sig.kind, _ = obj["type"].(string)
			sig.sourceToolCall, sig.hasSourceCall = obj["sourceToolCallId"]
			sig.sourceToolName, sig.hasSourceName = obj["sourceToolName"]
			sig.sequenceRaw, sig.hasSequenceRaw = obj["sequence"]
			if sig.hasSequenceRaw && sig.sequenceRaw != nil {
				sig.sequence, sig.hasSequence = toNumber(sig.sequenceRaw, true), true
			}
		}
		sig.isCallback = sig.kind == "tool-stdout" || sig.kind == "tool-callback"
		sig.isTaskCompleted = sig.kind == "task-completion"
		if truthy(s) {
			m.signal = sig
		}
	}
}

// ID returns the message id.
func (m *Message) ID() string { return m.id }

// Role returns the message role, or "" when it has none.
func (m *Message) Role() string { return m.role }

// ParentID returns the parent id and whether the message names one.
func (m *Message) ParentID() (string, bool) { return m.parentID, m.hasParent }

// Get returns one field of the message and whether it is present.
func (m *Message) Get(name string) (any, bool) {
	v, ok := m.fields[name]
	return v, ok
}

// Fields returns every field of the message. The map is shared: callers
// must treat it as read-only.
func (m *Message) Fields() map[string]any { return m.fields }

// Len returns the number of fields.
func (m *Message) Len() int { return len(m.fields) }

// With returns a copy of the message with field name set to value.
func (m *Message) With(name string, value any) *Message {
	f := make(map[string]any, len(m.fields)+1)
	maps.Copy(f, m.fields)
	f[name] = value
	return rebuild(f, m.id)
}

// Without returns a copy of the message without the named fields.
func (m *Message) Without(names ...string) *Message {
	f := maps.Clone(m.fields)
	for _, n := range names {
		delete(f, n)
	}
	return rebuild(f, m.id)
}

// rebuild makes a Message from fields that are known to carry id, keeping id
// even if a caller removed or changed it.
func rebuild(f map[string]any, id string) *Message {
	if _, ok := f["id"].(string); ok {
		id = f["id"].(string)
	}
	n := &Message{fields: f, id: id}
	n.index()
	return n
}

// MarshalJSON encodes the message as its JSON object.
func (m *Message) MarshalJSON() ([]byte, error) { return json.Marshal(m.fields) }

// UnmarshalJSON decodes a JSON object into the message.
func (m *Message) UnmarshalJSON(data []byte) error {
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	n, err := NewMessage(f)
	if err != nil {
		return err
	}
	*m = *n
	return nil
}
