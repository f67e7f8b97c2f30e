package conversation

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// ErrInvalidRepair is returned by ApplyRepairs for a repair it cannot
// apply: an unknown operation or a message that is not there.
var ErrInvalidRepair = errors.New("conversation: invalid repair")

// RepairOp names what a Repair changes.
type RepairOp string

// The repairs Diagnose proposes.
const (
	// RepairReparent sets the message's parentId to ParentID.
	RepairReparent RepairOp = "reparent"
	// RepairSetBranchIndex sets the message's metadata.activeBranchIndex
	// to Index.
	RepairSetBranchIndex RepairOp = "set-branch-index"
)

// Repair is one change to one message.
type Repair struct {
	Op        RepairOp `json:"type"`
	MessageID string   `json:"messageId"`
	// ParentID is the new parent (RepairReparent).
	ParentID string `json:"parentId,omitempty"`
	// Index is the new activeBranchIndex (RepairSetBranchIndex).
	Index int `json:"index"`
}

// MarshalJSON writes the fields of the repair's operation only: type,
// messageId, and parentId or index.
func (r Repair) MarshalJSON() ([]byte, error) {
	out := struct {
		Op        RepairOp `json:"type"`
		MessageID string   `json:"messageId"`
		ParentID  *string  `json:"parentId,omitempty"`
		Index     *int     `json:"index,omitempty"`
	}{Op: r.Op, MessageID: r.MessageID}
	switch r.Op {
	case RepairReparent:
		out.ParentID = &r.ParentID
	case RepairSetBranchIndex:
		out.Index = &r.Index
	}
	return json.Marshal(out)
}

// ApplyRepairs returns messages with repairs applied, in order. The input
// and its messages are not changed: a repaired message is a new Message and
// the others are shared. A repair naming an unknown operation or a message
// that is not in messages fails the whole call with ErrInvalidRepair.
func ApplyRepairs(messages []*Message, repairs []Repair) ([]*Message, error) {
	at := make(map[string][]int, len(messages))
	for i, m := range messages {
		at[m.ID()] = append(at[m.ID()], i)
	}
	out := make([]*Message, len(messages))
	copy(out, messages)
	for i, r := range repairs {
		pos, ok := at[r.MessageID]
		if !ok {
			return nil, fmt.Errorf("%w: repairs[%d]: no message %q", ErrInvalidRepair, i, r.MessageID)
		}
		for _, p := range pos {
			switch r.Op {
			case RepairReparent:
				out[p] = out[p].With("parentId", r.ParentID)
			case RepairSetBranchIndex:
				if r.Index < 0 {
					return nil, fmt.Errorf("%w: repairs[%d].index: %d is negative", ErrInvalidRepair, i, r.Index)
				}
				md := map[string]any{}
				if old, ok := out[p].Get("metadata"); ok {
					if m, ok := old.(map[string]any); ok {
						md = maps.Clone(m)
					}
				}
				md["activeBranchIndex"] = float64(r.Index)
				out[p] = out[p].With("metadata", md)
			default:
				return nil, fmt.Errorf("%w: repairs[%d].type: unknown operation %q", ErrInvalidRepair, i, r.Op)
			}
		}
	}
	return out, nil
}
