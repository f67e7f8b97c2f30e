package conversation

import (
	"encoding/json"
)

// NodeType names the kind of a context-tree node.
type NodeType string

// The kinds of context-tree nodes.
const (
	NodeMessage         NodeType = "message"         // one message
	NodeAssistantGroup  NodeType = "assistantGroup"  // an assistant run with its tool calls
	NodeCompare         NodeType = "compare"         // parallel outputs shown side by side
	NodeBranch          NodeType = "branch"          // alternative continuations
	NodeAgentCouncil    NodeType = "agentCouncil"    // several agents answering at once
	NodeTasks           NodeType = "tasks"           // async tasks spawned together
	NodeSignalCallbacks NodeType = "signalCallbacks" // replies fired by a tool's external signal
)

// Node is one node of the context tree, the semantic view of a conversation
// that keeps every branch. Which fields are set depends on Type.
type Node struct {
	Type NodeType
	ID   string

	// Tools lists the tool-result message ids of an assistant (message nodes).
	Tools []string
	// Children holds the steps of an assistantGroup or the tasks of a tasks node.
	Children []*Node
	// MessageID names the message that triggered a compare, agentCouncil or
	// tasks node.
	MessageID string

	// Columns are the parallel outputs of a compare node; ActiveColumnID,
	// when HasActiveColumn, names the one that enters the model's context.
	Columns         [][]*Node
	ActiveColumnID  string
	HasActiveColumn bool

	// Branches are the alternatives under ParentMessageID; ActiveBranchIndex
	// is the selected one (len(Branches) while a new branch is being created).
	Branches          [][]*Node
	ActiveBranchIndex int
	ParentMessageID   string

	// Members are the answers of an agentCouncil node.
	Members []*Node

	// Callbacks are the replies of a signalCallbacks node, fired by tool
	// result SourceToolMessageID; SourceToolCallID and SourceToolName are
	// copied from the first reply's signal (nil when it has none).
	Callbacks           []*Node
	SourceToolMessageID string
	SourceToolCallID    any
	SourceToolName      any
	hasSourceCall       bool
	hasSourceName       bool
}

// MarshalJSON writes the node in the reference's shape.
func (n *Node) MarshalJSON() ([]byte, error) {
	return n.appendJSON(make([]byte, 0, 64))
}

func (n *Node) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, n.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, string(n.Type))
	switch n.Type {
	case NodeMessage:
		if n.Tools != nil {
			b = append(b, `,"tools":[`...)
			for i, t := range n.Tools {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, t)
			}
			b = append(b, ']')
		}
	case NodeAssistantGroup:
		b = append(b, `,"children":`...)
		b, err = appendNodes(b, n.Children)
	case NodeTasks:
		b = append(b, `,"messageId":`...)
		b = appendString(b, n.MessageID)
		b = append(b, `,"children":`...)
		b, err = appendNodes(b, n.Children)
	case NodeCompare:
		b = append(b, `,"messageId":`...)
		b = appendString(b, n.MessageID)
		if n.HasActiveColumn {
			b = append(b, `,"activeColumnId":`...)
			b = appendString(b, n.ActiveColumnID)
		}
		b = append(b, `,"columns":`...)
		b, err = appendNodeLists(b, n.Columns)
	case NodeBranch:
		b = append(b, `,"parentMessageId":`...)
		b = appendString(b, n.ParentMessageID)
		b = append(b, `,"activeBranchIndex":`...)
		b = appendInt(b, n.ActiveBranchIndex)
		b = append(b, `,"branches":`...)
		b, err = appendNodeLists(b, n.Branches)
	case NodeAgentCouncil:
		b = append(b, `,"messageId":`...)
		b = appendString(b, n.MessageID)
		b = append(b, `,"members":`...)
		b, err = appendNodes(b, n.Members)
	case NodeSignalCallbacks:
		b = append(b, `,"sourceToolMessageId":`...)
		b = appendString(b, n.SourceToolMessageID)
		if n.hasSourceCall {
			b = append(b, `,"sourceToolCallId":`...)
			if b, err = appendValue(b, n.SourceToolCallID); err != nil {
				return nil, err
			}
		}
		if n.hasSourceName {
			b = append(b, `,"sourceToolName":`...)
			if b, err = appendValue(b, n.SourceToolName); err != nil {
				return nil, err
			}
		}
		b = append(b, `,"callbacks":`...)
		b, err = appendNodes(b, n.Callbacks)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendNodes(b []byte, ns []*Node) ([]byte, error) {
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = n.appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendNodeLists(b []byte, ls [][]*Node) ([]byte, error) {
	b = append(b, '[')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendNodes(b, l); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}
