package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// loadingPlaceholder is the content the chat UI gives an assistant message
// while its generation is still running.
const loadingPlaceholder = "..."

// containerChildren names, per container role, the field holding the
// messages the container will expand to when it is flattened.
var containerChildren = map[string]string{
	"assistantGroup": "children",
	"groupTasks":     "tasks",
	"supervisor":     "children",
	"tasks":          "tasks",
}

// PlaceholderMessageFilter drops the assistant placeholders that failed or
// abandoned generations leave behind: messages whose content is empty or
// the "..." loading marker and that carry nothing else (no tool calls, no
// reasoning, no attachments). Replayed to a model they carry no
// information, and one at the end of a request reads as an assistant
// prefill that some providers reject.
//
// Containers (tasks, groupTasks, assistantGroup, supervisor) lose their
// placeholder children too, and a container left with none is dropped, so
// that it cannot take a history-truncation slot and then vanish when it is
// flattened (TestPlaceholderMessageFilter/"prunes containers").
//
// The filter is meant to run twice, before truncation and after the
// flatten processors; the removed count accumulates across both runs. A
// pipeline's processors have distinct names, so the second run is
// registered as PostFlattenPlaceholderMessageFilterProcessor.
//
// Metadata: placeholderMessageFilter {removedCount}.
type PlaceholderMessageFilter struct {
	name string
}

// NewPlaceholderMessageFilter returns a PlaceholderMessageFilter processor.
func NewPlaceholderMessageFilter() *PlaceholderMessageFilter {
	return &PlaceholderMessageFilter{name: NamePlaceholderMessageFilter}
}

// NewPostFlattenPlaceholderMessageFilter returns the same filter under the
// name of its second run.
func NewPostFlattenPlaceholderMessageFilter() *PlaceholderMessageFilter {
	return &PlaceholderMessageFilter{name: NamePostFlattenPlaceholderMessageFilter}
}

// Name returns "PlaceholderMessageFilterProcessor", or
// "PostFlattenPlaceholderMessageFilterProcessor" for the second run.
func (p *PlaceholderMessageFilter) Name() string { return p.name }

// Process removes the placeholders.
func (*PlaceholderMessageFilter) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	removed := 0
	var kept []enginecore.Message
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		pruned, n, drop := pruneContainer(m)
		removed += n
		if drop || isPlaceholder(pruned) {
			if !drop {
				removed++
			}
			if kept == nil {
				kept = make([]enginecore.Message, i, len(pc.Messages))
				copy(kept, pc.Messages[:i])
			}
			continue
		}
		if kept == nil && n > 0 {
			kept = make([]enginecore.Message, i, len(pc.Messages))
			copy(kept, pc.Messages[:i])
		}
		if kept != nil {
			kept = append(kept, pruned)
		}
	}
	if kept != nil {
		next.Messages = kept
	}
	prior, _ := toFloat(dig(pc.Metadata["placeholderMessageFilter"], "removedCount"))
	next.Metadata["placeholderMessageFilter"] = map[string]any{"removedCount": prior + float64(removed)}
	return next, nil
}

// pruneContainer removes placeholder children from a container message.
// It returns the message to keep, how many messages it removed (the
// container itself counts when it ends up empty) and whether the
// container is to be dropped. Only assistant-like children are judged:
// tool and user children are legitimately empty.
func pruneContainer(m enginecore.Message) (enginecore.Message, int, bool) {
	role, _ := m["role"].(string)
	field, ok := containerChildren[role]
	if !ok {
		return m, 0, false
	}
	children, _ := m[field].([]any)
	if len(children) == 0 {
		return m, 0, false
	}
	kept := make([]any, 0, len(children))
	for _, c := range children {
		child := obj(c)
		childRole := child["role"]
		if childRole == nil {
			// Task children get their role when TasksFlatten runs.
			childRole = "assistant"
		}
		if childRole == "assistant" || childRole == "task" {
			asAssistant := maps.Clone(child)
			if asAssistant == nil {
				asAssistant = map[string]any{}
			}
			asAssistant["role"] = "assistant"
			if isPlaceholder(asAssistant) {
				continue
			}
		}
		kept = append(kept, c)
	}
	removed := len(children) - len(kept)
	switch {
	case removed == 0:
		return m, 0, false
	case len(kept) == 0:
		return nil, removed + 1, true
	}
	out := maps.Clone(m)
	out[field] = kept
	return out, removed, false
}

// isPlaceholder reports whether m is an assistant message without any
// output. A tools or tool_calls field, even an empty array, marks a
// message that went through the tool pipeline, which is kept.
func isPlaceholder(m enginecore.Message) bool {
	if m["role"] != "assistant" {
		return false
	}
	if _, ok := m["tools"].([]any); ok {
		return false
	}
	if _, ok := m["tool_calls"].([]any); ok {
		return false
	}
	if truthy(dig(m, "reasoning", "content")) {
		return false
	}
	for _, key := range []string{"imageList", "videoList", "audioList", "fileList"} {
		if jsLength(m[key]) > 0 {
			return false
		}
	}
	content, ok := m["content"].(string)
	if !ok {
		// Multimodal parts are output; a missing or null content is not.
		return m["content"] == nil
	}
	content = trimJS(content)
	return content == "" || content == loadingPlaceholder
}

// jsLength is JavaScript's v.length for arrays and strings, zero otherwise.
func jsLength(v any) int {
	switch x := v.(type) {
	case []any:
		return len(x)
	case string:
		return utf16Len(x)
	}
	return 0
}

func (d deps) placeholderMessageFilter(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewPlaceholderMessageFilter())
}

func (d deps) postFlattenPlaceholderMessageFilter(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewPostFlattenPlaceholderMessageFilter())
}
