package conversation

import (
	"encoding/json"
)

// NodeType names the kind of a context-tree node.
type NodeType uint8

// The kinds of context-tree nodes.
const (
	NodeMessage         NodeType = iota // one message
	NodeAssistantGroup                  // an assistant run with its tool calls
	NodeCompare                         // parallel outputs shown side by side
	NodeBranch                          // alternative continuations
	NodeAgentCouncil                    // several agents answering at once
	NodeTasks                           // async tasks spawned together
	NodeSignalCallbacks                 // replies fired by a tool's external signal
)

var nodeTypeNames = [...]string{"message", "assistantGroup", "compare", "branch", "agentCouncil", "tasks", "signalCallbacks"}

// String returns the type's name as it appears in JSON.
func (t NodeType) String() string {
	if int(t) < len(nodeTypeNames) {
		return nodeTypeNames[t]
	}
	return "unknown"
}

// Node is one node of the context tree, the semantic view of a conversation
// that keeps every branch. Message and assistantGroup nodes, the common
// ones, use the fields here; the other kinds keep theirs in Info.
type Node struct {
	Type NodeType
	ID   string
	// Tools lists the tool-result message ids of an assistant (message nodes).
	Tools []string
	// Children holds the steps of an assistantGroup, the tasks of a tasks
	// node, or the members of an agentCouncil node.
	Children []Node
	// Info holds the fields of compare, branch, agentCouncil, tasks and
	// signalCallbacks nodes.
	Info *NodeInfo
}

// NodeInfo holds the fields of the less common node kinds.
type NodeInfo struct {
	// MessageID names the message that triggered a compare, agentCouncil or
	// tasks node.
	MessageID string

	// Columns are the parallel outputs of a compare node; ActiveColumnID,
	// when HasActiveColumn, names the one that enters the model's context.
	Columns         [][]Node
	ActiveColumnID  string
	HasActiveColumn bool

	// Branches are the alternatives under ParentMessageID, each transformed
	// in full; ActiveBranchIndex is the selected one (len(Branches) while a
	// new branch is being created).
	ParentMessageID   string
	Branches          [][]Node
	ActiveBranchIndex int

	// Callbacks are the replies of a signalCallbacks node, ordered by their
	// signal's sequence and fired by tool result SourceToolMessageID;
	// SourceToolCallID and SourceToolName are copied from the first reply's
	// signal, and the Has flags tell whether it had them.
	Callbacks           []Node
	SourceToolMessageID string
	SourceToolCallID    any
	HasSourceToolCallID bool
	SourceToolName      any
	HasSourceToolName   bool
}

// MarshalJSON writes the node in the reference's shape.
func (n Node) MarshalJSON() ([]byte, error) {
	return n.appendJSON(make([]byte, 0, 64))
}

// AppendJSON appends what MarshalJSON writes to b, as the strconv Append
// functions do: a snapshot of many nodes is written into one buffer.
func (n *Node) AppendJSON(b []byte) ([]byte, error) { return n.appendJSON(b) }

func (n *Node) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, n.ID)
	b = append(b, `,"type":"`...)
	b = append(b, n.Type.String()...)
	b = append(b, '"')
	in := n.Info
	if in == nil {
		in = &NodeInfo{}
	}
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
		b = appendString(b, in.MessageID)
		b = append(b, `,"children":`...)
		b, err = appendNodes(b, n.Children)
	case NodeAgentCouncil:
		b = append(b, `,"messageId":`...)
		b = appendString(b, in.MessageID)
		b = append(b, `,"members":`...)
		b, err = appendNodes(b, n.Children)
	case NodeCompare:
		b = append(b, `,"messageId":`...)
		b = appendString(b, in.MessageID)
		if in.HasActiveColumn {
			b = append(b, `,"activeColumnId":`...)
			b = appendString(b, in.ActiveColumnID)
		}
		b = append(b, `,"columns":`...)
		b, err = appendNodeLists(b, in.Columns)
	case NodeBranch:
		b = append(b, `,"parentMessageId":`...)
		b = appendString(b, in.ParentMessageID)
		b = append(b, `,"activeBranchIndex":`...)
		b = appendInt(b, in.ActiveBranchIndex)
		b = append(b, `,"branches":`...)
		b, err = appendNodeLists(b, in.Branches)
	case NodeSignalCallbacks:
		b = append(b, `,"sourceToolMessageId":`...)
		b = appendString(b, in.SourceToolMessageID)
		if in.HasSourceToolCallID {
			b = append(b, `,"sourceToolCallId":`...)
			if b, err = appendValue(b, in.SourceToolCallID); err != nil {
				return nil, err
			}
		}
		if in.HasSourceToolName {
			b = append(b, `,"sourceToolName":`...)
			if b, err = appendValue(b, in.SourceToolName); err != nil {
				return nil, err
			}
		}
		b = append(b, `,"callbacks":`...)
		b, err = appendNodes(b, in.Callbacks)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendNodes(b []byte, ns []Node) ([]byte, error) {
	b = append(b, '[')
	for i := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = ns[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendNodeLists(b []byte, ls [][]Node) ([]byte, error) {
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

// MarshalNodes encodes a context tree as a JSON array.
func MarshalNodes(ns []Node) ([]byte, error) {
	return appendNodes(make([]byte, 0, 64*len(ns)+2), ns)
}
