package processors

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// DisabledToolCallFilterConfig configures DisabledToolCallFilter.
type DisabledToolCallFilterConfig struct {
	// DisabledToolIdentifiers are the tools not available in this scope.
	DisabledToolIdentifiers []string `json:"disabledToolIdentifiers"`
}

// DisabledToolCallFilter removes past calls to tools that are not
// available now: models otherwise imitate calls they see in the history
// even when the tool is no longer offered. Calls are matched by the tool
// identifier in tools and by function name prefix in tool_calls; the
// orphaned results are dropped later by ToolMessageReorder.
//
// Metadata: disabledToolCallFilter {filteredAssistantMessages,
// filteredToolCalls}, when any tool is disabled.
type DisabledToolCallFilter struct {
	disabled []string
}

// NewDisabledToolCallFilter returns a DisabledToolCallFilter processor.
func NewDisabledToolCallFilter(cfg DisabledToolCallFilterConfig) *DisabledToolCallFilter {
	return &DisabledToolCallFilter{disabled: cfg.DisabledToolIdentifiers}
}

// Name returns "DisabledToolCallFilter".
func (*DisabledToolCallFilter) Name() string { return NameDisabledToolCallFilter }

// Process filters the disabled tool calls.
func (p *DisabledToolCallFilter) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if len(p.disabled) == 0 {
		return pc, nil
	}
	next := pc.Derive()
	removedCalls := 0
	var n int
	var err error
	next.Messages, n, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "assistant" {
			return m, false
		}
		out, removed, changed := p.filter(m)
		removedCalls += removed
		return out, changed
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["disabledToolCallFilter"] = map[string]any{
		"filteredAssistantMessages": float64(n),
		"filteredToolCalls":         float64(removedCalls),
	}
	return next, nil
}

func (p *DisabledToolCallFilter) isDisabled(identifier any) bool {
	return slices.Contains(p.disabled, toolIdentifier(identifier))
}

// toolIdentifier is JavaScript's String(v ?? "").
func toolIdentifier(v any) string {
	if v == nil {
		return ""
	}
	return jsString(v)
}

func (p *DisabledToolCallFilter) disabledName(name string) bool {
	if name == "" {
		return false
	}
	for _, id := range p.disabled {
		if name == id || strings.HasPrefix(name, id+toolNameSeparator) {
			return true
		}
	}
	return false
}

func (p *DisabledToolCallFilter) filter(m enginecore.Message) (enginecore.Message, int, bool) {
	disabledIDs := make(map[string]bool)
	tools, toolsIsArray := m["tools"].([]any)
	for _, t := range tools {
		if p.isDisabled(dig(t, "identifier")) && truthy(dig(t, "id")) {
			disabledIDs[jsString(dig(t, "id"))] = true
		}
	}

	var out enginecore.Message
	removed := 0
	if calls, ok := m["tool_calls"].([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(calls), func(c any) bool {
			name, _ := dig(c, "function", "name").(string)
			return disabledIDs[toolIdentifier(dig(c, "id"))] || p.disabledName(name)
		})
		if len(kept) != len(calls) {
			out = maps.Clone(m)
			removed = len(calls) - len(kept)
			if len(kept) > 0 {
				out["tool_calls"] = kept
			} else {
				delete(out, "tool_calls")
			}
		}
	}
	if toolsIsArray {
		kept := slices.DeleteFunc(slices.Clone(tools), func(t any) bool { return p.isDisabled(dig(t, "identifier")) })
		if len(kept) != len(tools) {
			if out == nil {
				out = maps.Clone(m)
			}
			if len(kept) > 0 {
				out["tools"] = kept
			} else {
				delete(out, "tools")
			}
		}
	}
	if out == nil {
		return m, 0, false
	}
	return out, removed, true
}

func (d deps) disabledToolCallFilter(raw map[string]any) (enginecore.Processor, error) {
	var cfg DisabledToolCallFilterConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewDisabledToolCallFilter(cfg), nil
}
