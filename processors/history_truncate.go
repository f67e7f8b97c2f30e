package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// HistoryTruncateConfig configures HistoryTruncate.
type HistoryTruncateConfig struct {
	// EnableHistoryCount turns truncation on.
	EnableHistoryCount bool `json:"enableHistoryCount"`
	// HistoryCount is how many message groups to keep; nil keeps all,
	// zero or less keeps none.
	HistoryCount *int `json:"historyCount"`
}

// HistoryTruncate keeps only the last HistoryCount message groups. A group
// is what the chat UI shows as one unit: an assistant message with its tool
// results and follow-up assistant messages, an agent council, a compare
// block, or a set of parallel tasks; any other message is a group by itself.
//
// Metadata: historyTruncated (messages dropped), finalMessageCount.
type HistoryTruncate struct {
	cfg HistoryTruncateConfig
}

// NewHistoryTruncate returns a HistoryTruncate processor.
func NewHistoryTruncate(cfg HistoryTruncateConfig) *HistoryTruncate {
	return &HistoryTruncate{cfg: cfg}
}

// Name returns "HistoryTruncateProcessor".
func (*HistoryTruncate) Name() string { return NameHistoryTruncate }

// Process truncates the history.
func (p *HistoryTruncate) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	next.Messages = sliceHistory(pc.Messages, p.cfg)
	next.Metadata["historyTruncated"] = float64(len(pc.Messages) - len(next.Messages))
	next.Metadata["finalMessageCount"] = float64(len(next.Messages))
	return next, nil
}

func (d deps) historyTruncate(raw map[string]any) (enginecore.Processor, error) {
	var cfg HistoryTruncateConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewHistoryTruncate(cfg), nil
}

// historyIndex relates messages by id for group detection.
type historyIndex struct {
	byID     map[string]enginecore.Message
	children map[string][]string
}

func newHistoryIndex(msgs []enginecore.Message) *historyIndex {
	ix := &historyIndex{
		byID:     make(map[string]enginecore.Message, len(msgs)),
		children: make(map[string][]string),
	}
	for _, m := range msgs {
		ix.byID[idOf(m)] = m
	}
	for _, m := range msgs {
		if parent := m["parentId"]; truthy(parent) {
			key := idOfValue(parent)
			ix.children[key] = append(ix.children[key], idOf(m))
		}
	}
	return ix
}

// idOf returns a message's id as a map key (ids are normally strings).
func idOf(m enginecore.Message) string {
	v, ok := m["id"]
	if !ok {
		return "\x00undefined"
	}
	return idOfValue(v)
}

func (ix *historyIndex) role(id string) any {
	if m, ok := ix.byID[id]; ok {
		return m["role"]
	}
	return nil
}

// taskSiblings returns the task children of parent, in order.
func (ix *historyIndex) taskSiblings(parent string) []string {
	var out []string
	for _, id := range ix.children[parent] {
		if ix.role(id) == "task" {
			out = append(out, id)
		}
	}
	return out
}

func toolIDs(m enginecore.Message) []string {
	var out []string
	for _, t := range arr(m["tools"]) {
		out = append(out, idOfValue(dig(t, "id")))
	}
	return out
}

// idOfValue turns an id value into a map key; non-string ids get a prefix
// so that they never collide with string ids.
func idOfValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "\x00undefined"
	}
	return "\x00" + jsString(v)
}

func isGroupStart(m enginecore.Message, ix *historyIndex) bool {
	role := m["role"]
	switch {
	case role == "assistant" && hasItems(m["tools"]):
		return true
	case role == "tool" && dig(m, "metadata", "agentCouncil") == true:
		return true
	case dig(m, "metadata", "compare") == true:
		return true
	case role == "task" && truthy(m["parentId"]):
		sib := ix.taskSiblings(idOfValue(m["parentId"]))
		return len(sib) > 1 && sib[0] == idOf(m)
	}
	return false
}

// collectGroup returns the ids of the group starting at start.
func collectGroup(start enginecore.Message, ix *historyIndex) []string {
	role := start["role"]
	id := idOf(start)
	switch {
	case role == "assistant" && hasItems(start["tools"]):
		return collectAssistantChain(start, ix)
	case role == "tool" && dig(start, "metadata", "agentCouncil") == true:
		out := []string{id}
		for _, child := range ix.children[id] {
			out = append(out, child)
			if c, ok := ix.byID[child]; ok {
				out = append(out, toolIDs(c)...)
			}
		}
		return out
	case dig(start, "metadata", "compare") == true:
		return append([]string{id}, ix.children[id]...)
	case role == "task" && truthy(start["parentId"]):
		parent := idOfValue(start["parentId"])
		if sib := ix.taskSiblings(parent); len(sib) > 1 {
			return append([]string{parent}, sib...)
		}
	}
	return []string{id}
}

// collectAssistantChain gathers an assistant message, its tool results and
// the follow-up assistant messages of the same agent that hang off them.
func collectAssistantChain(start enginecore.Message, ix *historyIndex) []string {
	var out []string
	agent, hasAgent := start["agentId"]
	visited := make(map[string]bool)
	queue := []enginecore.Message{start}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		if a["role"] != "assistant" || visited[idOf(a)] {
			continue
		}
		visited[idOf(a)] = true
		out = append(out, idOf(a))
		for _, toolID := range toolIDs(a) {
			toolMsg, ok := ix.byID[toolID]
			if !ok {
				continue
			}
			out = append(out, toolID)
			if dig(toolMsg, "metadata", "agentCouncil") == true {
				continue
			}
			if len(ix.taskSiblings(toolID)) > 1 {
				continue
			}
			children := ix.children[toolID]
			if len(children) == 0 {
				continue
			}
			nextMsg, ok := ix.byID[children[0]]
			if !ok || nextMsg["role"] != "assistant" {
				continue
			}
			nextAgent, nextHas := nextMsg["agentId"]
			if nextHas == hasAgent && looseEqualID(nextAgent, agent) {
				queue = append(queue, nextMsg)
			}
		}
	}
	return out
}

// looseEqualID compares two agent ids with JavaScript's ===.
func looseEqualID(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	}
	return false
}

// sliceHistory keeps the messages of the last HistoryCount groups, in
// their original order.
func sliceHistory(msgs []enginecore.Message, cfg HistoryTruncateConfig) []enginecore.Message {
	if !cfg.EnableHistoryCount || cfg.HistoryCount == nil {
		return msgs
	}
	limit := *cfg.HistoryCount
	if limit <= 0 {
		return []enginecore.Message{}
	}

	ix := newHistoryIndex(msgs)
	groupOf := make(map[string]int, len(msgs))
	var groups [][]string
	for _, m := range msgs {
		id := idOf(m)
		if _, done := groupOf[id]; done {
			continue
		}
		members := []string{id}
		if isGroupStart(m, ix) {
			members = collectGroup(m, ix)
		}
		for _, member := range members {
			groupOf[member] = len(groups)
		}
		groups = append(groups, members)
	}

	selected := make(map[int]bool, limit)
	for i := len(msgs) - 1; i >= 0 && len(selected) < limit; i-- {
		if g, ok := groupOf[idOf(msgs[i])]; ok {
			selected[g] = true
		}
	}
	keep := make(map[string]bool)
	for g := range selected {
		for _, id := range groups[g] {
			keep[id] = true
		}
	}
	out := make([]enginecore.Message, 0, len(keep))
	for _, m := range msgs {
		if keep[idOf(m)] {
			out = append(out, m)
		}
	}
	return out
}
