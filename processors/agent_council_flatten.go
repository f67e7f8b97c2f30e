package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// AgentCouncilFlatten expands role "agentCouncil" messages, where several
// agents answered in parallel (members), into plain assistant and tool
// messages. A member that is itself an assistantGroup is expanded child by
// child. Members keep their agentId, model and provider; timestamps and
// meta fall back to the council's. A council without members is dropped.
//
// Metadata: agentCouncilFlattenProcessed, agentCouncilMessagesFlattened,
// agentCouncilAssistantMessagesCreated, agentCouncilToolMessagesCreated.
type AgentCouncilFlatten struct{}

// NewAgentCouncilFlatten returns an AgentCouncilFlatten processor.
func NewAgentCouncilFlatten() *AgentCouncilFlatten { return &AgentCouncilFlatten{} }

// Name returns "AgentCouncilFlattenProcessor".
func (*AgentCouncilFlatten) Name() string { return NameAgentCouncilFlatten }

// Process flattens the councils.
func (*AgentCouncilFlatten) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var out []enginecore.Message
	councils, assistants, tools := 0, 0, 0
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		members, isArray := m["members"].([]any)
		if m["role"] != "agentCouncil" || !isArray {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]enginecore.Message, 0, len(pc.Messages)+8), pc.Messages[:i]...)
		}
		if len(members) == 0 {
			continue
		}
		councils++
		parentID := dig(m, "extra", "parentMessageId")
		for _, mem := range members {
			member := obj(mem)
			if member["role"] == "assistantGroup" && truthy(member["children"]) {
				for _, c := range arr(member["children"]) {
					out = append(out, councilAssistant(obj(c), member, m, parentID))
					assistants++
					for _, t := range arr(obj(c)["tools"]) {
						if tool := obj(t); truthy(tool["result"]) {
							out = append(out, toolResultMessage(tool, member, m, parentID))
							tools++
						}
					}
				}
				continue
			}
			out = append(out, councilAssistant(member, member, m, parentID))
			assistants++
			for _, t := range arr(member["tools"]) {
				if tool := obj(t); truthy(tool["result"]) {
					out = append(out, toolResultMessage(tool, member, m, parentID))
					tools++
				}
			}
		}
	}
	if out != nil {
		next.Messages = out
	}
	next.Metadata["agentCouncilFlattenProcessed"] = float64(councils)
	next.Metadata["agentCouncilMessagesFlattened"] = float64(councils)
	next.Metadata["agentCouncilAssistantMessagesCreated"] = float64(assistants)
	next.Metadata["agentCouncilToolMessagesCreated"] = float64(tools)
	return next, nil
}

// councilAssistant builds the assistant message for one step: source holds
// the step's own content (a member, or a child of an assistantGroup
// member), member the agent-level fields and council the fallbacks.
func councilAssistant(source, member, council map[string]any, parentID any) enginecore.Message {
	a := enginecore.Message{"content": or(source["content"], ""), "role": "assistant"}
	copyField(a, source, "id")
	setOr(a, member, council, "createdAt")
	setOr(a, member, council, "meta")
	setOr(a, member, council, "updatedAt")
	for _, k := range [...]string{"agentId", "model", "provider"} {
		copyTruthy(a, member, k)
	}
	if tools := arr(source["tools"]); len(tools) > 0 {
		a["tools"] = toolSummaries(tools)
	}
	copyTruthy(a, source, "reasoning")
	copyTruthy(a, source, "error")
	if hasItems(source["imageList"]) {
		a["imageList"] = source["imageList"]
	}
	if truthy(parentID) {
		a["parentId"] = parentID
	}
	for _, k := range [...]string{"parentId", "threadId", "groupId", "topicId"} {
		copyTruthy(a, member, k)
	}
	return a
}

func (d deps) agentCouncilFlatten(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewAgentCouncilFlatten())
}
