package processors

import (
	"context"
	"maps"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// AgentInfo describes a member of an agent group.
type AgentInfo struct {
	// Name is how the agent is introduced to the others.
	Name string `json:"name"`
	// Role is "supervisor" or "participant".
	Role string `json:"role"`
}

func (*AgentInfo) ignoresUnknownFields() {}

// GroupRoleTransformConfig configures GroupRoleTransform.
type GroupRoleTransformConfig struct {
	// AgentMap maps agent ids to their names and roles.
	AgentMap map[string]AgentInfo `json:"agentMap"`
	// CurrentAgentID is the agent about to answer.
	CurrentAgentID string `json:"currentAgentId"`
	// ToolName names a tool in the transcript; nil gives
	// "identifier.apiName".
	ToolName func(identifier, apiName string) string `json:"-"`
}

// GroupRoleTransform prepares a group chat for one agent. From the model's
// point of view its own turns are "assistant" and everything else is
// external input, so the other agents' assistant and tool messages become
// user messages tagged <speaker name="..."/>, with their tool calls and
// results written out as <tool_use> and <tool_result> blocks. This keeps
// the model from imitating the tags in its own answers. Messages of agents
// missing from AgentMap are left alone.
//
// Metadata: groupRoleTransformProcessed {assistantTransformed,
// toolTransformed}.
type GroupRoleTransform struct {
	cfg GroupRoleTransformConfig
}

// NewGroupRoleTransform returns a GroupRoleTransform processor.
func NewGroupRoleTransform(cfg GroupRoleTransformConfig) *GroupRoleTransform {
	return &GroupRoleTransform{cfg: cfg}
}

// Name returns "GroupRoleTransformProcessor".
func (*GroupRoleTransform) Name() string { return NameGroupRoleTransform }

// Process transforms the other agents' messages.
func (p *GroupRoleTransform) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if p.cfg.CurrentAgentID == "" || p.cfg.AgentMap == nil {
		return pc.Derive(), nil
	}
	next := pc.Derive()
	assistants, tools := 0, 0
	var err error
	next.Messages, _, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		role := m["role"]
		if (role != "assistant" && role != "tool") || !truthy(m["agentId"]) {
			return m, false
		}
		agentID := jsString(m["agentId"])
		if agentID == p.cfg.CurrentAgentID {
			return m, false
		}
		agent, ok := p.cfg.AgentMap[agentID]
		if !ok {
			return m, false
		}
		out := maps.Clone(m)
		out["role"] = "user"
		speaker := `<speaker name="` + agent.Name + "\" />\n"
		if role == "assistant" {
			content := speaker + textContent(m["content"])
			if list := arr(m["tools"]); len(list) > 0 {
				content += p.toolUse(list)
			}
			out["content"] = content
			delete(out, "tools")
			assistants++
			return out, true
		}
		callID := "unknown"
		if id := m["tool_call_id"]; truthy(id) {
			callID = jsString(id)
		}
		out["content"] = speaker + `<tool_result id="` + callID + `" name="` + p.toolName(m["plugin"]) + "\">\n" +
			textContent(m["content"]) + "\n</tool_result>"
		delete(out, "plugin")
		delete(out, "tool_call_id")
		tools++
		return out, true
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["groupRoleTransformProcessed"] = map[string]any{
		"assistantTransformed": float64(assistants),
		"toolTransformed":      float64(tools),
	}
	return next, nil
}

// toolUse renders an assistant's tool calls as a <tool_use> block.
func (p *GroupRoleTransform) toolUse(tools []any) string {
	var b strings.Builder
	b.WriteString("\n\n<tool_use>\n")
	for _, t := range tools {
		id := "unknown"
		if v := dig(t, "id"); truthy(v) {
			id = jsString(v)
		}
		args := ""
		if v := dig(t, "arguments"); truthy(v) {
			args = jsString(v)
		}
		b.WriteString(`<tool id="` + id + `" name="` + p.toolName(t) + "\">\n" + args + "\n</tool>\n")
	}
	b.WriteString("</tool_use>")
	return b.String()
}

func (p *GroupRoleTransform) toolName(tool any) string {
	if !truthy(tool) {
		return "unknown"
	}
	identifier, apiName := "", ""
	if v := dig(tool, "identifier"); truthy(v) {
		identifier = jsString(v)
	}
	if v := dig(tool, "apiName"); truthy(v) {
		apiName = jsString(v)
	}
	switch {
	case p.cfg.ToolName != nil:
		return p.cfg.ToolName(identifier, apiName)
	case identifier != "" && apiName != "":
		return identifier + "." + apiName
	case identifier != "":
		return identifier
	case apiName != "":
		return apiName
	}
	return "unknown"
}

// textContent returns string content as is and the text parts of
// multimodal content joined by newlines; anything else gives "".
func textContent(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var texts []string
		for _, part := range c {
			if dig(part, "type") == "text" {
				text := ""
				if v := dig(part, "text"); truthy(v) {
					text = jsString(v)
				}
				texts = append(texts, text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

func (d deps) groupRoleTransform(raw map[string]any) (enginecore.Processor, error) {
	var cfg GroupRoleTransformConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewGroupRoleTransform(cfg), nil
}
