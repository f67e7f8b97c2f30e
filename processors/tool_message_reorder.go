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
// It returns calls itself when nothing is dropped, the common case.
func uniqueCalls(calls []any) []any {
	var out []any // allocated on the first dropped call
	var seen map[string]bool
	if len(calls) > 16 {
		seen = make(map[string]bool, len(calls))
	}
	for i, c := range calls {
		id := dig(c, "id")
		drop := !truthy(id)
		if !drop {
			key := idOfValue(id)
			if seen != nil {
				drop = seen[key]
				seen[key] = true
			} else {
				for _, prev := range calls[:i] {
					if pid := dig(prev, "id"); truthy(pid) && idOfValue(pid) == key {
						drop = true
						break
					}
				}
			}
		}
		switch {
		case drop && out == nil:
			out = append(make([]any, 0, len(calls)), calls[:i]...)
		case !drop && out != nil:
			out = append(out, c)
		}
	}
	if out == nil {
		return calls
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
