package processors_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/convstream/convstream/processors"
)

func newPlaceholders(t *testing.T, cfg processors.PlaceholderVariablesConfig) *processors.PlaceholderVariables {
	t.Helper()
	p, err := processors.NewPlaceholderVariables(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlaceholderVariablesRender(t *testing.T) {
	gens := map[string]processors.VariableFunc{
		"date":   constant("2023-12-25"),
		"nested": constant("Value with {{date}} inside"),
		"none":   func() (string, error) { return "", processors.ErrNoValue },
		"empty":  constant(""),
		"broken": func() (string, error) { return "", errors.New("boom") },
	}
	p := newPlaceholders(t, processors.PlaceholderVariablesConfig{Generators: gens})
	cases := map[string]string{
		"Today is {{date}}":                "Today is 2023-12-25",
		"Hi {{ date }} {{missing}}":        "Hi 2023-12-25 {{missing}}",
		"Nested: {{nested}}":               "Nested: Value with 2023-12-25 inside",
		"{{none}} stays":                   "{{none}} stays",
		"[{{empty}}]":                      "[]",
		"{{date}} then {{broken}}":         "{{date}} then {{broken}}", // a failing generator stops the text
		"unclosed {{date":                  "unclosed {{date",
		"{{a {{date}}":                     "{{a {{date}}",
		"no placeholders":                  "no placeholders",
		"\u00a0{{\u00a0date\u00a0}}\u00a0": "\u00a02023-12-25\u00a0",
	}
	for in, want := range cases {
		if got, err := p.Render(context.Background(), in); err != nil || got != want {
			t.Errorf("Render(%q) = %q, want %q", in, got, want)
		}
	}
	depth1 := 1
	shallow := newPlaceholders(t, processors.PlaceholderVariablesConfig{Generators: gens, Depth: &depth1})
	if got, _ := shallow.Render(context.Background(), "Nested: {{nested}}"); got != "Nested: Value with {{date}} inside" {
		t.Errorf("depth 1: %q", got)
	}
	negative := -1
	if _, err := processors.NewPlaceholderVariables(processors.PlaceholderVariablesConfig{Depth: &negative}); !errors.Is(err, processors.ErrInvalidConfig) {
		t.Errorf("negative depth: %v", err)
	}
}

func TestPlaceholderVariablesMessages(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"user","content":"I am {{user}}"},
		{"id":"2","role":"tool","content":[{"type":"text","text":"id={{agent}}"},{"type":"image_url","image_url":{"url":"{{user}}"}},{"type":"text","text":5}]},
		{"id":"3","role":"tool","error":{"type":"budget"}},
		{"id":"4","role":"assistant","content":"{{unknown}}"}
	]`)
	// Static values come from the spec; generators from the registry.
	p := build(t, processors.NamePlaceholderVariables, map[string]any{"variableGenerators": map[string]any{
		"user": "Ann", "list": []any{"a", nil, 2.0}, "obj": map[string]any{"k": "<v>"},
	}}, processors.WithVariables(map[string]processors.VariableFunc{"agent": constant("agt_1")}))
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"user","content":"I am Ann"},
		{"id":"2","role":"tool","content":[{"type":"text","text":"id=agt_1"},{"type":"image_url","image_url":{"url":"{{user}}"}},{"type":"text","text":5}]},
		{"id":"3","role":"tool","error":{"type":"budget"}},
		{"id":"4","role":"assistant","content":"{{unknown}}"}]`)
	assertJSON(t, out.Metadata, `{"placeholderVariablesProcessed":2}`)

	pp := p.(*processors.PlaceholderVariables)
	if got, _ := pp.Render(context.Background(), "{{list}} {{obj}}"); got != `a, 2 {"k":"<v>"}` {
		t.Errorf("static values: %q", got)
	}
	if strings.Contains(js(msgs), "Ann") {
		t.Fatal("input modified")
	}
}
