package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// toolFailureContent stands in for the result of a tool call that has
// none, so that every tool call is answered.
const toolFailureContent = `{"error":"Tool call failed","success":false,"synthetic":true}`

// ToolMessageReorder puts every tool result right after the assistant
// message that called it, in the order of the calls, as providers require.
// Results matching no call, or a call already answered, are dropped;
// duplicate calls are removed; a call without a result gets a synthetic
// failure result. An empty result of a failed call carries the plugin
// error message instead.
//
// Metadata: toolMessageReorder {originalCount, removedInvalidTools,
// reorderedCount}.
type ToolMessageReorder struct{}

// NewToolMessageReorder returns a ToolMessageReorder processor.
func NewToolMessageReorder() *ToolMessageReorder { return &ToolMessageReorder{} }

// Name returns "ToolMessageReorder".
func (*ToolMessageReorder) Name() string { return NameToolMessageReorder }

// Process reorders the tool messages.
func (*ToolMessageReorder) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	out, removed := reorderToolMessages(pc.Messages)
	next.Messages = out
	next.Metadata["toolMessageReorder"] = map[string]any{
		"originalCount":       float64(len(pc.Messages)),
		"removedInvalidTools": float64(removed),
		"reorderedCount":      float64(len(out)),
	}
	return next, nil
}

// uniqueCalls returns the tool calls with a truthy id, first of each id.
func uniqueCalls(calls []any) []any {
	seen := make(map[string]bool, len(calls))
	out := make([]any, 0, len(calls))
	for _, c := range calls {
		id := dig(c, "id")
		if !truthy(id) {
			continue
		}
		key := idOfValue(id)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, c)
	}
	return out
}

func reorderToolMessages(msgs []enginecore.Message) ([]enginecore.Message, int) {
	valid := make(map[string]bool)
	for _, m := range msgs {
		if m["role"] != "assistant" {
			continue
		}
		calls, ok := m["tool_calls"].([]any)
		if !ok {
			continue
		}
		for _, c := range uniqueCalls(calls) {
			valid[idOfValue(dig(c, "id"))] = true
		}
	}

	removed := 0
	results := make(map[string]enginecore.Message)
	for _, m := range msgs {
		if m["role"] != "tool" {
			continue
		}
		id := m["tool_call_id"]
		key := idOfValue(id)
		if !truthy(id) || !valid[key] {
			removed++
			continue
		}
		if _, dup := results[key]; dup {
			removed++
			continue
		}
		results[key] = m
	}

	out := make([]enginecore.Message, 0, len(msgs))
	for _, m := range msgs {
		if m["role"] == "tool" {
			continue
		}
		calls, ok := m["tool_calls"].([]any)
		if m["role"] != "assistant" || !ok {
			out = append(out, m)
			continue
		}
		unique := uniqueCalls(calls)
		if len(unique) == len(calls) {
			out = append(out, m)
		} else {
			trimmed := maps.Clone(m)
			trimmed["tool_calls"] = unique
			out = append(out, trimmed)
		}
		for _, c := range unique {
			id := dig(c, "id")
			key := idOfValue(id)
			if result, ok := results[key]; ok {
				out = append(out, withToolResultContent(result))
				delete(results, key)
				continue
			}
			synthetic := enginecore.Message{"content": toolFailureContent, "role": "tool", "tool_call_id": id}
			if name := dig(c, "function", "name"); truthy(name) {
				synthetic["name"] = name
			}
			out = append(out, synthetic)
		}
	}
	return out, removed
}

// withToolResultContent makes sure a tool result has string content: a
// missing or empty result of a failed call carries the error message (or
// the synthetic failure).
func withToolResultContent(m enginecore.Message) enginecore.Message {
	errMsg, _ := dig(m, "pluginError", "message").(string)
	if content, ok := m["content"].(string); ok && (content != "" || errMsg == "") {
		return m
	}
	out := maps.Clone(m)
	if errMsg != "" {
		out["content"] = errMsg
	} else {
		out["content"] = toolFailureContent
	}
	return out
}

func (d deps) toolMessageReorder(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewToolMessageReorder())
}
