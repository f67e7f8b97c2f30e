package processors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// ErrNoValue is returned by a VariableFunc that has no value: its
// placeholder is left as written.
var ErrNoValue = errors.New("placeholder variable has no value")

// VariableFunc produces the value of a placeholder variable. Returning
// ErrNoValue leaves the placeholder in place; any other error stops the
// substitution in the text being processed, keeping what was done so far.
type VariableFunc func() (string, error)

// PlaceholderVariablesConfig configures PlaceholderVariables.
type PlaceholderVariablesConfig struct {
	// Depth is how many substitution rounds run, so that a value may itself
	// contain placeholders; nil means 2.
	Depth *int `json:"depth"`
	// Values are static variable values. Strings are used as they are;
	// arrays are joined with ", ", objects written as JSON, null is empty.
	Values map[string]any `json:"variableGenerators"`
	// Generators compute values on demand; they take precedence over Values.
	Generators map[string]VariableFunc `json:"-"`
}

// PlaceholderVariables replaces {{name}} placeholders (spaces allowed
// inside the braces) in message text, string content or the text parts of
// multimodal content, with the values of variables. Unknown placeholders
// stay as they are.
//
// Metadata: placeholderVariablesProcessed (messages whose text changed).
type PlaceholderVariables struct {
	depth int
	vars  map[string]VariableFunc
}

// NewPlaceholderVariables returns a PlaceholderVariables processor.
func NewPlaceholderVariables(cfg PlaceholderVariablesConfig) (*PlaceholderVariables, error) {
	p := &PlaceholderVariables{depth: 2, vars: make(map[string]VariableFunc, len(cfg.Values)+len(cfg.Generators))}
	if cfg.Depth != nil {
		if *cfg.Depth < 0 {
			return nil, fieldErr("depth", "must be a non-negative integer")
		}
		p.depth = *cfg.Depth
	}
	for k, v := range cfg.Values {
		text := formatPlaceholderValue(v)
		p.vars[k] = func() (string, error) { return text, nil }
	}
	maps.Copy(p.vars, cfg.Generators)
	return p, nil
}

// Name returns "PlaceholderVariablesProcessor".
func (*PlaceholderVariables) Name() string { return NamePlaceholderVariables }

// Process substitutes the placeholders.
func (p *PlaceholderVariables) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	next.Messages, n = mapMessages(pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		switch content := m["content"].(type) {
		case string:
			text := p.Render(content)
			if text == content {
				return m, false
			}
			out := maps.Clone(m)
			out["content"] = text
			return out, true
		case []any:
			var parts []any
			for i, item := range content {
				part := obj(item)
				text, ok := part["text"].(string)
				if part["type"] != "text" || !ok {
					continue
				}
				rendered := p.Render(text)
				if rendered == text {
					continue
				}
				if parts == nil {
					parts = slices.Clone(content)
				}
				np := maps.Clone(part)
				np["text"] = rendered
				parts[i] = np
			}
			if parts == nil {
				return m, false
			}
			out := maps.Clone(m)
			out["content"] = parts
			return out, true
		}
		return m, false
	})
	next.Metadata["placeholderVariablesProcessed"] = float64(n)
	return next, nil
}

// Render substitutes the placeholders of text.
func (p *PlaceholderVariables) Render(text string) string {
	result := text
	for range p.depth {
		tokens := placeholderTokens(result)
		if len(tokens) == 0 {
			break
		}
		values := make(map[string]string, len(tokens))
		failed := false
		for _, t := range tokens {
			gen, ok := p.vars[t.key]
			if !ok {
				continue
			}
			v, err := gen()
			if errors.Is(err, ErrNoValue) {
				continue
			}
			if err != nil {
				failed = true
				break
			}
			values[t.key] = v
		}
		if failed || len(values) == 0 {
			break
		}
		replaced := replacePlaceholders(result, tokens, values)
		if replaced == result {
			break
		}
		result = replaced
	}
	return result
}

type placeholderToken struct {
	start, end int // byte offsets of "{{" and just past "}}"
	key        string
}

func placeholderTokens(text string) []placeholderToken {
	var tokens []placeholderToken
	for i := 0; i < len(text); {
		start := strings.Index(text[i:], "{{")
		if start < 0 {
			break
		}
		start += i
		end := strings.Index(text[start+2:], "}}")
		if end < 0 {
			break
		}
		end += start + 2
		tokens = append(tokens, placeholderToken{start: start, end: end + 2, key: trimJS(text[start+2 : end])})
		i = end + 2
	}
	return tokens
}

func replacePlaceholders(text string, tokens []placeholderToken, values map[string]string) string {
	var b strings.Builder
	cursor := 0
	for _, t := range tokens {
		b.WriteString(text[cursor:t.start])
		if v, ok := values[t.key]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(text[t.start:t.end])
		}
		cursor = t.end
	}
	b.WriteString(text[cursor:])
	return b.String()
}

// formatPlaceholderValue renders a static variable value.
func formatPlaceholderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []any:
		var items []string
		for _, item := range x {
			if s := formatPlaceholderValue(item); s != "" {
				items = append(items, s)
			}
		}
		return strings.Join(items, ", ")
	case map[string]any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as JSON.stringify
		if enc.Encode(x) != nil {
			return ""
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	return jsString(v)
}

func (d deps) placeholderVariables(raw map[string]any) (enginecore.Processor, error) {
	var cfg PlaceholderVariablesConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Generators = d.variables
	return NewPlaceholderVariables(cfg)
}
