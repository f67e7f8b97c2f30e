package processors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
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
// It is called once a round for each variable a text names, however often
// the text names it.
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

// Process substitutes the placeholders, within the run's budget
// (pc.Budget): an expansion that would add more than its bytes, or take
// more rounds than its depth, fails with a *enginecore.LimitError before
// its text is built; ctx is checked as messages and rounds go by.
func (p *PlaceholderVariables) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	var err error
	next.Messages, n, err = expandMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool, error) {
		switch content := m["content"].(type) {
		case string:
			text, err := p.render(ctx, pc.Budget, content)
			if err != nil || text == content {
				return m, false, err
			}
			out := maps.Clone(m)
			out["content"] = text
			return out, true, nil
		case []any:
			var parts []any
			for i, item := range content {
				part := obj(item)
				text, ok := part["text"].(string)
				if part["type"] != "text" || !ok {
					continue
				}
				rendered, err := p.render(ctx, pc.Budget, text)
				if err != nil {
					return m, false, err
				}
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
				return m, false, nil
			}
			out := maps.Clone(m)
			out["content"] = parts
			return out, true, nil
		}
		return m, false, nil
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["placeholderVariablesProcessed"] = float64(n)
	return next, nil
}

// Render substitutes the placeholders of text within the default limits
// (enginecore.DefaultLimits); it fails as Process does.
func (p *PlaceholderVariables) Render(ctx context.Context, text string) (string, error) {
	return p.render(ctx, nil, text)
}

// render substitutes the placeholders of text, one round after another
// while a round still finds values, up to the configured depth. Each round
// first measures what it would write and fails if that adds more than the
// budget's room to text (TestPlaceholderDoublingRefused: values that
// double at every level) or if the round is past the depth limit; only
// then is the text built. What the rendering added is recorded in budget.
func (p *PlaceholderVariables) render(ctx context.Context, budget *enginecore.Budget, text string) (string, error) {
	room := budget.Room()
	maxDepth := budget.Limits().MaxExpansionDepth
	result := text
	values := make(map[string]string)
	for round := range p.depth {
		if err := ctx.Err(); err != nil {
			return text, fmt.Errorf("placeholder expansion stopped: %w", err)
		}
		clear(values)
		size, found, failed := 0, false, false
		for t := range placeholders(result) {
			found = true
			v, known := values[t.key]
			if !known {
				gen, ok := p.vars[t.key]
				if !ok {
					continue
				}
				if err := ctx.Err(); err != nil {
					return text, fmt.Errorf("placeholder expansion stopped: %w", err)
				}
				var err error
				v, err = gen()
				if errors.Is(err, ErrNoValue) {
					continue
				}
				if err != nil {
					failed = true
					break
				}
				values[t.key] = v
			}
			size += len(v) - (t.end - t.start)
		}
		if !found || failed || len(values) == 0 {
			break
		}
		if round >= maxDepth {
			return text, budget.TooDeep(p.depth)
		}
		if added := int64(len(result) + size - len(text)); added > room {
			return text, budget.TooMuch(added)
		}
		replaced := replacePlaceholders(result, len(result)+size, values)
		if replaced == result {
			break
		}
		result = replaced
	}
	if err := budget.Add(int64(len(result) - len(text))); err != nil {
		return text, err
	}
	return result, nil
}

type placeholderToken struct {
	start, end int // byte offsets of "{{" and just past "}}"
	key        string
}

// placeholders yields the {{key}} tokens of text in order.
func placeholders(text string) iter.Seq[placeholderToken] {
	return func(yield func(placeholderToken) bool) {
		for i := 0; i < len(text); {
			start := strings.Index(text[i:], "{{")
			if start < 0 {
				return
			}
			start += i
			end := strings.Index(text[start+2:], "}}")
			if end < 0 {
				return
			}
			end += start + 2
			key := text[start+2 : end]
			if key != "" && (mayBeSpace(key[0]) || mayBeSpace(key[len(key)-1])) {
				key = trimJS(key)
			}
			if !yield(placeholderToken{start: start, end: end + 2, key: key}) {
				return
			}
			i = end + 2
		}
	}
}

// mayBeSpace reports whether b may begin or end a JavaScript white space
// character: ASCII space and controls, or any byte of a multi-byte
// character. Keys are trimmed only then, which spares the scan of a
// large text (BenchmarkPlaceholderDoublingRefused) a call per token.
func mayBeSpace(b byte) bool { return b <= ' ' || b >= 0x80 }

// replacePlaceholders writes text with the tokens that have values
// replaced; size is the length of the result.
func replacePlaceholders(text string, size int, values map[string]string) string {
	var b strings.Builder
	b.Grow(size)
	cursor := 0
	for t := range placeholders(text) {
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
