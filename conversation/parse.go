// Package conversation turns a chat conversation stored as a tree of
// messages (each names its parent; regenerations and edits make branches)
// into the views a chat product needs: a context tree that keeps every
// branch, the flat list of the active path for rendering, and a map of all
// messages by id.
//
// Parse works in three phases, as the reference implementation does:
// indexing (lookups by id and by parent), structuring (the id tree of the
// main flow) and transformation (branch resolution, message collection, the
// flat list and the context tree). Every walk is iterative, so no input
// depth can exhaust the stack, and malformed input yields a result or an
// error, never a panic or a hang.
package conversation

import (
	"errors"
	"fmt"
	"maps"
)

// ErrTooManyMessages is returned when a conversation exceeds the message
// limit given to Parse.
var ErrTooManyMessages = errors.New("conversation: too many messages")

// DefaultMaxMessages is the message limit Parse applies unless told
// otherwise.
const DefaultMaxMessages = 1_000_000

// Result is the outcome of Parse.
type Result struct {
	// ContextTree is the semantic tree: every branch, run and group.
	ContextTree []*Node `json:"contextTree"`
	// FlatList is the active path as a UI renders it, virtual messages
	// included.
	FlatList []*Message `json:"flatList"`
	// MessageMap holds every message by id, as shown (supervisor roles set,
	// tool-using assistants' metadata trimmed to usage and performance).
	MessageMap map[string]*Message `json:"messageMap"`
}

// Option configures Parse.
type Option func(*options)

type options struct {
	maxMessages int
}

// WithMaxMessages limits the number of messages Parse accepts; 0 or less
// means no limit.
func WithMaxMessages(n int) Option { return func(o *options) { o.maxMessages = n } }

// Parse builds the context tree, the flat list and the message map of a
// conversation. groups may be nil. Messages that repeat an id replace the
// earlier one (the last occurrence wins, in its own position); nil entries
// are skipped.
func Parse(messages []*Message, groups []*MessageGroup, opts ...Option) (*Result, error) {
	o := options{maxMessages: DefaultMaxMessages}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxMessages > 0 && len(messages) > o.maxMessages {
		return nil, fmt.Errorf("%w: %d messages, limit %d", ErrTooManyMessages, len(messages), o.maxMessages)
	}

	msgs := preprocess(messages)
	ix := buildIndex(msgs, groups)
	col := &collector{ix: ix}

	tree := (&treeBuilder{ix: ix, col: col}).build()

	w := newFlatWalker(ix, col)
	if err := w.flatten(); err != nil {
		return nil, err
	}

	return &Result{
		ContextTree: tree,
		FlatList:    finishFlatList(w.out),
		MessageMap:  finishMessageMap(msgs),
	}, nil
}

// preprocess drops nil entries and earlier duplicates, and gives messages of
// a sub-agent that agent's id, so that runs of different agents never merge.
func preprocess(messages []*Message) []*Message {
	last := make(map[string]int, len(messages))
	for i, m := range messages {
		if m != nil {
			last[m.id] = i
		}
	}
	out := make([]*Message, 0, len(last))
	for i, m := range messages {
		if m == nil || last[m.id] != i {
			continue
		}
		if m.meta != nil && m.meta["scope"] == "sub_agent" && truthy(m.meta["subAgentId"]) {
			m = m.With("agentId", m.meta["subAgentId"])
		}
		out = append(out, m)
	}
	return out
}

// finishFlatList applies the display rules to flat-list entries: legacy
// supervisor flags become the supervisor role, and usage kept in metadata is
// lifted to the top level.
func finishFlatList(items []flatItem) []*Message {
	out := make([]*Message, len(items))
	for i, it := range items {
		if it.msg != nil {
			out[i] = finishOriginal(it.msg)
			continue
		}
		f := it.fields
		if f["role"] == "assistant" && isLegacySupervisor(f["metadata"]) {
			f["role"] = "supervisor"
		}
		if u := metadataUsage(f["metadata"]); !truthy(f["usage"]) && truthy(u) {
			f["usage"] = u
		}
		out[i] = rebuild(f, idOf(f))
	}
	return out
}

// finishOriginal applies the flat-list display rules to an input message,
// copying it only when something changes.
func finishOriginal(m *Message) *Message {
	supervisor := m.role == "assistant" && m.flags&flagIsSupervisor != 0
	u := metadataUsage(m.fields["metadata"])
	lift := !truthy(m.fields["usage"]) && truthy(u)
	if !supervisor && !lift {
		return m
	}
	f := maps.Clone(m.fields)
	if supervisor {
		f["role"] = "supervisor"
	}
	if lift {
		f["usage"] = u
	}
	return rebuild(f, m.id)
}

// finishMessageMap builds the message map: supervisor roles set, and the
// metadata of tool-using assistants trimmed to usage and performance.
func finishMessageMap(msgs []*Message) map[string]*Message {
	out := make(map[string]*Message, len(msgs))
	for _, m := range msgs {
		f := m.fields
		changed := false
		role := m.role
		if role == "assistant" && m.flags&flagIsSupervisor != 0 {
			f = maps.Clone(f)
			f["role"] = "supervisor"
			role = "supervisor"
			changed = true
		}
		if role == "assistant" && nonEmptyList(f["tools"]) && truthy(f["metadata"]) {
			kept := map[string]any{}
			if md, ok := f["metadata"].(map[string]any); ok {
				for k, v := range md {
					if isUsagePerformanceField(k) {
						kept[k] = v
					}
				}
			}
			if !changed {
				f = maps.Clone(f)
				changed = true
			}
			if len(kept) > 0 {
				f["metadata"] = kept
			} else {
				delete(f, "metadata")
			}
		}
		if changed {
			out[m.id] = rebuild(f, m.id)
		} else {
			out[m.id] = m
		}
	}
	return out
}

func isLegacySupervisor(meta any) bool {
	md, ok := meta.(map[string]any)
	return ok && truthy(md["isSupervisor"])
}

func metadataUsage(meta any) any {
	if md, ok := meta.(map[string]any); ok {
		return md["usage"]
	}
	return nil
}

func idOf(f map[string]any) string {
	s, _ := f["id"].(string)
	return s
}
