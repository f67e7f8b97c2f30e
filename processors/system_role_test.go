package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestSystemRoleInjector(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"u1","role":"user","content":"hi"}]`)
	p := processors.NewSystemRoleInjector(processors.SystemRoleConfig{SystemRole: "Be brief.", Clock: fixedClock})
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[
		{"content":"Be brief.","createdAt":1796008320000,"id":"system-SystemRoleInjector-1796008320000","role":"system","updatedAt":1796008320000},
		{"id":"u1","role":"user","content":"hi"}]`)
	assertJSON(t, out.Metadata, `{"systemRoleInjected":true}`)

	// Appends to the existing system message, which keeps its position.
	msgs = parseMessages(t, `[{"id":"u0","role":"user","content":"x"},{"id":"s1","role":"system","content":"Docs first."}]`)
	out = process(t, p, msgs)
	assertJSON(t, out.Messages[1], `{"id":"s1","role":"system","content":"Docs first.\n\nBe brief."}`)
	if &out.Messages[0] == &msgs[0] {
		t.Fatal("result shares the input's backing array")
	}
}

func TestSystemRoleInjectorSkipsBlank(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"u1","role":"user","content":"hi"}]`)
	for _, role := range []string{"", "  \n\t "} {
		out := process(t, processors.NewSystemRoleInjector(processors.SystemRoleConfig{SystemRole: role}), msgs)
		if len(out.Messages) != 1 || len(out.Metadata) != 0 {
			t.Fatalf("blank role %q injected: %v", role, out.Messages)
		}
	}
	// In a spec, a malformed stored role (not a string) counts as none.
	for _, v := range []any{42.0, []any{"a"}, map[string]any{"x": "y"}, nil} {
		out := process(t, build(t, processors.NameSystemRoleInjector, map[string]any{"systemRole": v}), msgs)
		if len(out.Messages) != 1 {
			t.Fatalf("role %v injected", v)
		}
	}
	configError(t, processors.NameSystemRoleInjector, map[string]any{"role": "typo"})
}
