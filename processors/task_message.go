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

// Process converts the task messages. A template is filled within the
// run's budget (pc.Budget): what it adds beyond the message's own texts
// (content, instruction, agent name) is drawn from it, and a filling that
// would exceed it stops before it is built (TestTaskMessageBounded: a
// template of many slots with "$`" patterns in the content grows with the
// square of their sizes).
func (p *TaskMessage) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	var err error
	next.Messages, n, err = expandMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool, error) {
		if m["role"] != "task" {
			return m, false, nil
		}
		content := or(m["content"], "")
		out := maps.Clone(m)
		out["role"] = "assistant"
		instruction := dig(m, "metadata", "instruction")
		if !truthy(instruction) {
			out["content"] = content
			return out, true, nil
		}
		agentName := jsString(or(or(m["agentName"], dig(m, "meta", "avatar")), "Sub Agent"))
		instructionText, contentText := jsString(instruction), jsString(content)
		own := len(agentName) + len(instructionText) + len(contentText)
		limit := int64(own) + pc.Budget.Room()
		text := p.template
		for _, slot := range [...][2]string{{"{{agentName}}", agentName}, {"{{instruction}}", instructionText}, {"{{content}}", contentText}} {
			var ok bool
			if text, ok = jsReplaceAll(text, slot[0], slot[1], limit); !ok {
				return m, false, pc.Budget.TooMuch(limit - int64(own) + 1)
			}
		}
		if err := pc.Budget.Add(int64(len(text) - own)); err != nil {
			return m, false, err
		}
		out["content"] = text
		return out, true, nil
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["taskMessagesProcessed"] = float64(n)
	return next, nil
}

// jsReplaceAll is JavaScript's s.replaceAll(pattern, replacement) for a
// string pattern, including the $$, $&, $` and $' replacement patterns.
// It gives up, returning false, as soon as the result grows past limit
// bytes.
func jsReplaceAll(s, pattern, replacement string, limit int64) (string, bool) {
	if pattern == "" || !strings.Contains(s, pattern) {
		return s, int64(len(s)) <= limit
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
		} else if !expandReplacement(&b, replacement, s, pos, pattern, limit) {
			return "", false
		}
		if int64(b.Len()) > limit {
			return "", false
		}
		rest = pos + len(pattern)
	}
	b.WriteString(s[rest:])
	return b.String(), int64(b.Len()) <= limit
}

func expandReplacement(b *strings.Builder, repl, s string, pos int, match string, limit int64) bool {
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
		if int64(b.Len()) > limit {
			return false
		}
		i++
	}
	return true
}

func (d deps) taskMessage(raw map[string]any) (enginecore.Processor, error) {
	var cfg TaskMessageConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewTaskMessage(cfg), nil
}
