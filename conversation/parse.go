package conversation

import (
	"errors"
	"fmt"
	"math"
)

// ErrTooManyMessages is returned when a conversation exceeds the message
// limit given to Parse.
var ErrTooManyMessages = errors.New("conversation: too many messages")

// ErrTooDeep is returned when branch points nest deeper than the limit
// given to Parse.
var ErrTooDeep = errors.New("conversation: too deep")

// DefaultMaxMessages is the message limit Parse applies unless told
// otherwise.
const DefaultMaxMessages = 1_000_000

// DefaultMaxBranchDepth is the nesting limit for branch points Parse applies
// unless told otherwise. Each level nests the context tree's JSON three
// levels deeper; this default keeps it within the 10,000 levels that common
// JSON decoders (Go's encoding/json among them) accept.
const DefaultMaxBranchDepth = 3000

// Result is the outcome of Parse.
type Result struct {
	// ContextTree is the semantic tree: every branch, run and group.
	ContextTree []Node `json:"contextTree"`
	// FlatList is the active path as a UI renders it, virtual messages
	// included.
	FlatList []*Message `json:"flatList"`
	// MessageMap holds every message by id, as shown (supervisor roles set,
	// tool-using assistants' metadata trimmed to usage and performance).
	MessageMap MessageMap `json:"messageMap"`
}

// Option configures Parse.
type Option func(*options)

type options struct {
	// int32, so that a Conversation fits its size class (they are limits
	// far below 2^31; larger ones are taken as 2^31-1).
	maxMessages    int32
	maxBranchDepth int32
}

func defaultOptions() options {
	return options{maxMessages: DefaultMaxMessages, maxBranchDepth: DefaultMaxBranchDepth}
}

// WithMaxMessages limits the number of messages Parse accepts; 0 or less
// means no limit.
func WithMaxMessages(n int) Option { return func(o *options) { o.maxMessages = limit32(n) } }

// WithMaxBranchDepth limits how deeply branch points may nest (a branch
// inside a branch inside ...); 0 or less means no limit.
func WithMaxBranchDepth(n int) Option { return func(o *options) { o.maxBranchDepth = limit32(n) } }

// limit32 returns the limit n as an int32: at most math.MaxInt32, and 0
// (no limit) for any n of 0 or less, which a plain conversion of a large
// negative n would not give.
func limit32(n int) int32 { return int32(max(min(n, math.MaxInt32), 0)) }

// Parse builds the context tree, the flat list and the message map of a
// conversation. groups may be nil. Messages that repeat an id replace the
// earlier one (the last occurrence wins, in its own position); nil entries
// are skipped.
func Parse(messages []*Message, groups []*MessageGroup, opts ...Option) (*Result, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxMessages > 0 && len(messages) > int(o.maxMessages) {
		return nil, fmt.Errorf("%w: %d messages, limit %d", ErrTooManyMessages, len(messages), o.maxMessages)
	}

	ix := buildIndex(preprocess(messages), groups)
	col := &collector{ix: ix}

	tree, err := (&treeBuilder{ix: ix, col: col, maxDepth: int(o.maxBranchDepth)}).build()
	if err != nil {
		return nil, err
	}

	w := newFlatWalker(ix, col, len(ix.msgs), nil)
	if err := w.flatten(); err != nil {
		return nil, err
	}

	return &Result{
		ContextTree: tree,
		FlatList:    w.out,
		MessageMap:  MessageMap{ids: ix.ids},
	}, nil
}

// preprocess drops nil entries and earlier duplicates, and gives messages of
// a sub-agent that agent's id, so that runs of different agents never merge.
// It returns the id index of what it keeps.
func preprocess(messages []*Message) idIndex {
	x := newIDIndex(len(messages))
	dups := false
	for _, m := range messages {
		if m == nil {
			continue
		}
		if m.flags&flagSubAgent != 0 {
			m = m.withSubAgent()
		}
		if x.add(m) {
			dups = true
		}
	}
	if !dups {
		return x
	}
	// The last occurrence of an id wins, in its own position.
	y := newIDIndex(len(x.msgs))
	for i, m := range x.msgs {
		if p, _ := x.lookup(m.ID()); p == int32(i) {
			y.add(m)
		}
	}
	return y
}

// The flat list shows legacy supervisor flags as the supervisor role, and
// usage kept in metadata lifted to the top level.

// finishVirtual applies the flat-list display rules to a message built by
// the walk (it owns f) and wraps it.
func finishVirtual(f map[string]any) *Message {
	if f["role"] == "assistant" && isLegacySupervisor(f["metadata"]) {
		f["role"] = "supervisor"
	}
	if u := metadataUsage(f["metadata"]); !truthy(f["usage"]) && truthy(u) {
		f["usage"] = u
	}
	return rebuild(f, idOf(f))
}

// finishOriginal applies the flat-list display rules to an input message,
// copying it only when something changes.
func finishOriginal(vc *viewCache, m *Message) *Message {
	supervisor := m.Role() == "assistant" && m.flags&flagIsSupervisor != 0
	lift := m.flags&flagLiftUsage != 0
	if !supervisor && !lift {
		return m
	}
	f := vc.object(m)
	u := metadataUsage(f["metadata"])
	if supervisor {
		f["role"] = "supervisor"
	}
	if lift {
		f["usage"] = u
	}
	return rebuild(f, m.ID())
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
