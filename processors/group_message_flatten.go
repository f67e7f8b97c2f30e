package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// GroupMessageFlatten expands role "assistantGroup" and "supervisor"
// messages, which bundle an assistant turn's steps for display (children,
// each with its tool calls and results), back into the plain sequence a
// model expects: per child an assistant message with its tool calls,
// followed by one tool message per tool result. A bundle without children
// is dropped.
//
// Metadata: groupMessagesFlattenProcessed, groupMessagesFlattened,
// assistantMessagesCreated, toolMessagesCreated.
type GroupMessageFlatten struct{}

// NewGroupMessageFlatten returns a GroupMessageFlatten processor.
func NewGroupMessageFlatten() *GroupMessageFlatten { return &GroupMessageFlatten{} }

// Name returns "GroupMessageFlattenProcessor".
func (*GroupMessageFlatten) Name() string { return NameGroupMessageFlatten }

// Process flattens the groups.
func (*GroupMessageFlatten) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var out []enginecore.Message
	groups, assistants, tools := 0, 0, 0
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		role := m["role"]
		children, isArray := m["children"].([]any)
		if (role != "assistantGroup" && role != "supervisor") || !isArray {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]enginecore.Message, 0, len(pc.Messages)+8), pc.Messages[:i]...)
		}
		if len(children) == 0 {
			continue
		}
		groups++
		for _, c := range children {
			child := obj(c)
			a := enginecore.Message{"content": or(child["content"], ""), "role": "assistant"}
			copyField(a, m, "createdAt")
			copyField(a, child, "id")
			copyField(a, m, "meta")
			copyField(a, m, "updatedAt")
			childTools := arr(child["tools"])
			if len(childTools) > 0 {
				a["tools"] = toolSummaries(childTools)
			}
			copyTruthy(a, child, "reasoning")
			copyTruthy(a, child, "error")
			if hasItems(child["imageList"]) {
				a["imageList"] = child["imageList"]
			}
			for _, k := range [...]string{"parentId", "threadId", "groupId", "agentId", "targetId", "topicId"} {
				copyTruthy(a, m, k)
			}
			out = append(out, a)
			assistants++

			for _, t := range childTools {
				tool := obj(t)
				if !truthy(tool["result"]) {
					continue
				}
				out = append(out, toolResultMessage(tool, m, m, nil))
				tools++
			}
		}
	}
	if out != nil {
		next.Messages = out
	}
	next.Metadata["groupMessagesFlattenProcessed"] = float64(groups)
	next.Metadata["groupMessagesFlattened"] = float64(groups)
	next.Metadata["assistantMessagesCreated"] = float64(assistants)
	next.Metadata["toolMessagesCreated"] = float64(tools)
	return next, nil
}

// toolResultMessage builds the tool message carrying a tool call's result.
// Timestamps and meta come from owner, falling back to fallback (for
// council members, which may lack them); references (parentId, threadId,
// groupId, topicId) come from owner, after parentID when given.
func toolResultMessage(tool, owner, fallback map[string]any, parentID any) enginecore.Message {
	result := obj(tool["result"])
	msg := enginecore.Message{
		"plugin": toolSummary(tool),
		"role":   "tool",
	}
	copyField(msg, result, "content")
	copyField(msg, result, "id")
	if v := result["error"]; truthy(v) {
		msg["pluginError"] = v
	}
	if v := result["state"]; truthy(v) {
		msg["pluginState"] = v
	}
	if v, ok := tool["id"]; ok {
		msg["tool_call_id"] = v
	}
	setOr(msg, owner, fallback, "createdAt")
	setOr(msg, owner, fallback, "meta")
	setOr(msg, owner, fallback, "updatedAt")
	if truthy(parentID) {
		msg["parentId"] = parentID
	}
	for _, k := range [...]string{"parentId", "threadId", "groupId", "topicId"} {
		copyTruthy(msg, owner, k)
	}
	return msg
}

func (d deps) groupMessageFlatten(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewGroupMessageFlatten())
}
