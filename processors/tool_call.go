package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// ToolCallConfig configures ToolCall.
type ToolCallConfig struct {
	// Model and Provider are passed to CanUseFunctionCalling.
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// CanUseFunctionCalling reports whether the model can call tools; nil
	// means it can.
	CanUseFunctionCalling CapabilityFunc `json:"-"`
	// ToolName names tool calls; nil gives "identifier.apiName". The
	// standard pipeline uses ToolNameResolver.Generate.
	ToolName ToolNameFunc `json:"-"`
}

// ToolCall converts tool calls to the OpenAI format. An assistant
// message's tools become tool_calls ({id, type: "function", function: {name,
// arguments}}) with their arguments sanitised; a tool message gets the
// function name. For a model that cannot call tools, assistant messages
// lose their tool fields and tool messages become user messages.
//
// Metadata: toolCallProcessed, toolCallsConverted, toolMessagesConverted,
// supportTools.
type ToolCall struct {
	cfg ToolCallConfig
}

// NewToolCall returns a ToolCall processor.
func NewToolCall(cfg ToolCallConfig) *ToolCall {
	return &ToolCall{cfg: cfg}
}

// Name returns "ToolCallProcessor".
func (*ToolCall) Name() string { return NameToolCall }

// Process converts the tool calls.
func (p *ToolCall) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	support := p.cfg.CanUseFunctionCalling == nil || p.cfg.CanUseFunctionCalling(p.cfg.Model, p.cfg.Provider)
	next := pc.Derive()
	calls, results := 0, 0
	var n int
	var err error
	next.Messages, n, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		switch m["role"] {
		case "assistant":
			out, changed := p.assistant(m, support)
			if changed && truthy(m["tools"]) {
				calls += len(arr(m["tools"]))
			}
			return out, changed
		case "tool":
			results++
			return p.tool(m, support), true
		}
		return m, false
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["toolCallProcessed"] = float64(n)
	next.Metadata["toolCallsConverted"] = float64(calls)
	next.Metadata["toolMessagesConverted"] = float64(results)
	next.Metadata["supportTools"] = support
	return next, nil
}

func (p *ToolCall) assistant(m enginecore.Message, support bool) (enginecore.Message, bool) {
	tools := arr(m["tools"])
	calls, hasCalls := m["tool_calls"].([]any)
	if !support || (len(tools) == 0 && hasCalls && len(calls) == 0) {
		out := maps.Clone(m)
		delete(out, "tools")
		delete(out, "tool_calls")
		return out, true
	}
	if len(tools) == 0 {
		return m, false
	}
	converted := make([]any, len(tools))
	for i, t := range tools {
		tool := obj(t)
		fn := map[string]any{
			"arguments": SanitizeToolArguments(str(tool["arguments"])),
			"name":      p.name(tool),
		}
		call := map[string]any{"function": fn, "type": "function"}
		copyField(call, tool, "id")
		copyField(call, tool, "thoughtSignature")
		converted[i] = call
	}
	out := cloneFor(m, 1)
	out["tool_calls"] = converted
	return out, true
}

func (p *ToolCall) tool(m enginecore.Message, support bool) enginecore.Message {
	out := cloneFor(m, 1)
	if !support {
		delete(out, "name")
		delete(out, "plugin")
		delete(out, "tool_call_id")
		out["role"] = "user"
		return out
	}
	if plugin := obj(m["plugin"]); truthy(m["plugin"]) {
		out["name"] = p.name(plugin)
	} else {
		delete(out, "name")
	}
	return out
}

// name names the tool of a tool call or a tool message's plugin.
func (p *ToolCall) name(tool map[string]any) string {
	if p.cfg.ToolName == nil {
		return textOf(tool, "identifier") + "." + textOf(tool, "apiName")
	}
	return p.cfg.ToolName(str(tool["identifier"]), str(tool["apiName"]), str(tool["type"]))
}

func (d deps) toolCall(raw map[string]any) (enginecore.Processor, error) {
	var cfg ToolCallConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.CanUseFunctionCalling = d.caps.FunctionCalling
	cfg.ToolName = d.toolName
	return NewToolCall(cfg), nil
}
