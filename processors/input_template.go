package processors

import (
	"context"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/convstream/convstream/enginecore"
)

// InputTemplateConfig configures InputTemplate.
type InputTemplateConfig struct {
	// InputTemplate wraps each user message; {{text}} (spaces allowed
	// inside the braces) stands for the message's text.
	InputTemplate string `json:"inputTemplate"`
}

// InputTemplate rewrites every user message through the agent's input
// template.
//
// The reference compiles the template with lodash, which would also run
// JavaScript embedded in <% ... %> blocks; such templates are not
// supported here and, like a template that fails in the reference, leave
// the messages unchanged.
//
// Metadata: inputTemplateProcessed (absent when no template is set).
type InputTemplate struct {
	parts       []string // literal text around the {{text}} slots
	literal     int      // the length of the parts together
	unsupported bool
	enabled     bool
}

// NewInputTemplate returns an InputTemplate processor.
func NewInputTemplate(cfg InputTemplateConfig) *InputTemplate {
	p := &InputTemplate{enabled: cfg.InputTemplate != ""}
	if hasScriptBlock(cfg.InputTemplate) {
		p.unsupported = true
		return p
	}
	p.parts = splitTextSlots(cfg.InputTemplate)
	for _, part := range p.parts {
		p.literal += len(part)
	}
	return p
}

// Name returns "InputTemplateProcessor".
func (*InputTemplate) Name() string { return NameInputTemplate }

// Process applies the template to the user messages. What the template
// adds to a message (its literal text, and the message's text once more
// for every {{text}} slot after the first) is drawn from the run's budget
// (pc.Budget) before the message is built: a template of many slots cannot
// multiply a conversation past the run's limit
// (TestInputTemplateBounded).
func (p *InputTemplate) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	if !p.enabled {
		return next, nil
	}
	n := 0
	if !p.unsupported {
		var err error
		next.Messages, n, err = expandMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool, error) {
			if m["role"] != "user" {
				return m, false, nil
			}
			original, present := m["content"]
			text := ""
			if present && original != nil {
				text = jsString(original)
			}
			added := int64(p.literal) + int64(len(p.parts)-2)*int64(len(text))
			if added > pc.Budget.Room() {
				return m, false, pc.Budget.TooMuch(added)
			}
			rendered := strings.Join(p.parts, text)
			if s, ok := original.(string); ok && s == rendered {
				return m, false, nil
			}
			if err := pc.Budget.Add(added); err != nil {
				return m, false, err
			}
			out := maps.Clone(m)
			out["content"] = rendered
			return out, true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	next.Metadata["inputTemplateProcessed"] = float64(n)
	return next, nil
}

// hasScriptBlock reports whether tmpl holds a <% ... %> block.
func hasScriptBlock(tmpl string) bool {
	start := strings.Index(tmpl, "<%")
	// The block needs at least one character between the delimiters.
	return start >= 0 && len(tmpl) > start+3 && strings.Contains(tmpl[start+3:], "%>")
}

// splitTextSlots splits tmpl around its {{text}} slots.
func splitTextSlots(tmpl string) []string {
	var parts []string
	last := 0
	for i := 0; i < len(tmpl); {
		j := strings.Index(tmpl[i:], "{{")
		if j < 0 {
			break
		}
		start := i + j
		if end, ok := matchTextSlot(tmpl, start+2); ok {
			parts = append(parts, tmpl[last:start])
			last = end
			i = end
			continue
		}
		i = start + 1
	}
	return append(parts, tmpl[last:])
}

// matchTextSlot matches `\s*text\s*}}` at i and returns the end offset.
func matchTextSlot(s string, i int) (int, bool) {
	i = skipJSSpace(s, i)
	if !strings.HasPrefix(s[i:], "text") {
		return 0, false
	}
	i = skipJSSpace(s, i+len("text"))
	if !strings.HasPrefix(s[i:], "}}") {
		return 0, false
	}
	return i + 2, true
}

func skipJSSpace(s string, i int) int {
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += w
	}
	return i
}

func (d deps) inputTemplate(raw map[string]any) (enginecore.Processor, error) {
	var cfg InputTemplateConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewInputTemplate(cfg), nil
}
