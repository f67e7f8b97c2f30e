package processors

import (
	"context"
	"maps"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// DefaultTaskTemplate combines a task's instruction and result. It
// understands {{agentName}}, {{instruction}} and {{content}}.
const DefaultTaskTemplate = "[Task Result from {{agentName}}]\n\n**Task Instruction:**\n{{instruction}}\n\n**Task Result:**\n{{content}}"

// TaskMessageConfig configures TaskMessage.
type TaskMessageConfig struct {
	// Template formats a task with an instruction; empty means
	// DefaultTaskTemplate.
	Template string `json:"template"`
}

// TaskMessage turns role "task" messages into assistant messages. A task
// with an instruction (metadata.instruction) is rendered through the
// template so the model sees what was asked and what came back.
//
// Metadata: taskMessagesProcessed.
type TaskMessage struct {
	template string
}

// NewTaskMessage returns a TaskMessage processor.
func NewTaskMessage(cfg TaskMessageConfig) *TaskMessage {
	if cfg.Template == "" {
		cfg.Template = DefaultTaskTemplate
	}
	return &TaskMessage{template: cfg.Template}
}

// Name returns "TaskMessageProcessor".
func (*TaskMessage) Name() string { return NameTaskMessage }

// Process converts the task messages.
func (p *TaskMessage) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	next.Messages, n = mapMessages(pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "task" {
			return m, false
		}
		content := or(m["content"], "")
		out := maps.Clone(m)
		out["role"] = "assistant"
		instruction := dig(m, "metadata", "instruction")
		if !truthy(instruction) {
			out["content"] = content
			return out, true
		}
		agentName := or(or(m["agentName"], dig(m, "meta", "avatar")), "Sub Agent")
		text := jsReplaceAll(p.template, "{{agentName}}", jsString(agentName))
		text = jsReplaceAll(text, "{{instruction}}", jsString(instruction))
		out["content"] = jsReplaceAll(text, "{{content}}", jsString(content))
		return out, true
	})
	next.Metadata["taskMessagesProcessed"] = float64(n)
	return next, nil
}

// jsReplaceAll is JavaScript's s.replaceAll(pattern, replacement) for a
// string pattern, including the $$, $&, $` and $' replacement patterns.
func jsReplaceAll(s, pattern, replacement string) string {
	if pattern == "" || !strings.Contains(s, pattern) {
		return s
	}
	plain := !strings.Contains(replacement, "$")
	var b strings.Builder
	rest := 0
	for {
		i := strings.Index(s[rest:], pattern)
		if i < 0 {
			break
		}
		pos := rest + i
		b.WriteString(s[rest:pos])
		if plain {
			b.WriteString(replacement)
		} else {
			expandReplacement(&b, replacement, s, pos, pattern)
		}
		rest = pos + len(pattern)
	}
	b.WriteString(s[rest:])
	return b.String()
}

func expandReplacement(b *strings.Builder, repl, s string, pos int, match string) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '$' || i+1 >= len(repl) {
			b.WriteByte(c)
			continue
		}
		switch repl[i+1] {
		case '$':
			b.WriteByte('$')
		case '&':
			b.WriteString(match)
		case '`':
			b.WriteString(s[:pos])
		case '\'':
			b.WriteString(s[pos+len(match):])
		default:
			b.WriteByte('$')
			continue
		}
		i++
	}
}

func (d deps) taskMessage(raw map[string]any) (enginecore.Processor, error) {
	var cfg TaskMessageConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewTaskMessage(cfg), nil
}
