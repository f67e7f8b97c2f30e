package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestInputTemplate(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"user","content":"hello"},
		{"id":"2","role":"assistant","content":"hi"},
		{"id":"3","role":"user","content":["a",null,"b"]},
		{"id":"4","role":"user"}
	]`)
	p := processors.NewInputTemplate(processors.InputTemplateConfig{InputTemplate: "<q>{{ text }}</q> again: {{text}} {{other}}"})
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"user","content":"<q>hello</q> again: hello {{other}}"},
		{"id":"2","role":"assistant","content":"hi"},
		{"id":"3","role":"user","content":"<q>a,,b</q> again: a,,b {{other}}"},
		{"id":"4","role":"user","content":"<q></q> again:  {{other}}"}]`)
	assertJSON(t, out.Metadata, `{"inputTemplateProcessed":3}`)

	// A template whose result equals the input counts nothing.
	out = process(t, processors.NewInputTemplate(processors.InputTemplateConfig{InputTemplate: "{{text}}"}), msgs[:1])
	assertJSON(t, out.Metadata, `{"inputTemplateProcessed":0}`)

	// Script blocks are not run: messages stay as they are.
	for _, tmpl := range []string{"<%= text.toUpperCase() %>", "{{text}} <%- x %>"} {
		out = process(t, processors.NewInputTemplate(processors.InputTemplateConfig{InputTemplate: tmpl}), msgs)
		if out.Messages[0]["content"] != "hello" || out.Metadata["inputTemplateProcessed"] != 0.0 {
			t.Fatalf("template %q applied: %v", tmpl, out.Messages[0])
		}
	}
	// "<%" alone is plain text.
	out = process(t, processors.NewInputTemplate(processors.InputTemplateConfig{InputTemplate: "50<% of {{text}}"}), msgs[:1])
	if out.Messages[0]["content"] != "50<% of hello" {
		t.Fatalf("got %v", out.Messages[0]["content"])
	}

	// No template: no metadata either.
	if out := process(t, build(t, processors.NameInputTemplate, nil), msgs); len(out.Metadata) != 0 {
		t.Fatal("metadata without template")
	}
}
