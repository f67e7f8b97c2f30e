package processors_test

import (
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// TestContextSelectionsInjector ports the upstream ContextSelectionsInjector
// suite; each case names the upstream test it comes from.
func TestContextSelectionsInjector(t *testing.T) {
	cases := []struct {
		upstream string
		enabled  bool
		in       string
		has      []string
		hasNot   []string
		count    any
	}{{
		upstream: "should skip injection when disabled",
		in:       `[{"content":"Question","role":"user","metadata":{"contextSelections":[{"content":"Selected text","id":"text-1","source":"text"}]}}]`,
		hasNot:   []string{"Selected text"},
	}, {
		upstream: "should inject text context selections independently from legacy page selections",
		enabled:  true,
		in: `[{"content":"What does this mean?","role":"user","metadata":{
			"contextSelections":[{"content":"脚踢自学习","id":"text-1","source":"text","title":"脚踢自学习"}],
			"pageSelections":[{"content":"Legacy page selection","id":"page-1","pageId":"page-1","xml":"<p>Legacy page selection</p>"}]}}]`,
		has:    []string{"What does this mean?", "<user_context_selections>", `source="text"`, "脚踢自学习"},
		hasNot: []string{"<user_page_selections>", "Legacy page selection"},
		count:  1.0,
	}, {
		upstream: "should inject code context selections with source metadata",
		enabled:  true,
		in: `[{"content":"Review this code","role":"user","metadata":{"contextSelections":[
			{"content":"const value = 1;","filePath":"src/example.ts","id":"code-1","lineRange":{"endLine":12,"startLine":12},"source":"code"}]}}]`,
		has:   []string{"Review this code", "<user_context_selections>", `filePath="src/example.ts"`, `lines="12-12"`, "const value = 1;"},
		count: 1.0,
	}}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			p := build(t, processors.NameContextSelectionsInjector, map[string]any{"enabled": tc.enabled})
			out := process(t, p, parseMessages(t, tc.in))
			c := content(out.Messages[0])
			for _, s := range tc.has {
				if !strings.Contains(c, s) {
					t.Errorf("content lacks %q:\n%s", s, c)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(c, s) {
					t.Errorf("content holds %q:\n%s", s, c)
				}
			}
			if got := out.Metadata["ContextSelectionsInjectorInjectedCount"]; got != tc.count {
				t.Errorf("count %v, want %v", got, tc.count)
			}
		})
	}
}

// TestContextSelectionsInjectorFormat pins the whole block, the reuse of
// an existing SYSTEM CONTEXT wrapper, and multimodal content.
func TestContextSelectionsInjectorFormat(t *testing.T) {
	p := processors.NewContextSelectionsInjector(processors.ContextSelectionsInjectorConfig{Enabled: true})
	in := parseMessages(t, `[{"role":"user","content":"Q","metadata":{"contextSelections":[
		{"content":"body","id":"p1","source":"page","pageId":"pg\"1","xml":"<p>x</p>","title":"A & B"},
		{"content":"diff","id":"c1","source":"code","filePath":"a.go","language":"go","side":"additions","lineRange":{"startLine":3}}]}}]`)
	out := process(t, p, in)
	block := "<user_context_selections>\n<user_context_selections count=\"2\">\n" +
		"<context_selection source=\"page\" title=\"A &amp; B\" pageId=\"pg&quot;1\">\n<p>x</p>\n</context_selection>\n" +
		"<context_selection source=\"code\" filePath=\"a.go\" language=\"go\" side=\"additions\" lines=\"3-3\">\ndiff\n</context_selection>\n" +
		"</user_context_selections>\n</user_context_selections>\n<!-- END SYSTEM CONTEXT -->"
	c := content(out.Messages[0])
	if !strings.HasPrefix(c, "Q\n\n<!-- SYSTEM CONTEXT (NOT PART OF USER QUERY) -->\n<context.instruction>") || !strings.HasSuffix(c, block) {
		t.Fatalf("content:\n%s", c)
	}

	// A second injection goes into the same wrapper.
	again := process(t, p, []enginecore.Message{out.Messages[0]})
	c2 := content(again.Messages[0])
	if strings.Count(c2, "SYSTEM CONTEXT (NOT PART") != 1 || strings.Count(c2, "<user_context_selections count=") != 2 {
		t.Fatalf("wrapper not reused:\n%s", c2)
	}

	multi := process(t, p, parseMessages(t, `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}],
		"metadata":{"contextSelections":[{"content":"t","id":"t1","source":"text"}]}}]`))
	parts := multi.Messages[0]["content"].([]any)
	if len(parts) != 2 || !strings.Contains(dig(parts[1], "text").(string), `<context_selection source="text">`) {
		t.Fatalf("multimodal: %v", parts)
	}
}
