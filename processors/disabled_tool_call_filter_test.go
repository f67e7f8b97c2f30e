package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestDisabledToolCallFilter(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"a1","role":"assistant","content":"",
		 "tools":[{"id":"c1","identifier":"lobe-cloud-sandbox"},{"id":"c2","identifier":"web"}],
		 "tool_calls":[{"id":"c1","function":{"name":"lobe-cloud-sandbox____run"}},{"id":"c2","function":{"name":"web____search"}},{"id":"c3","function":{"name":"lobe-cloud-sandbox____exec"}}]},
		{"id":"a2","role":"assistant","content":"","tools":[{"id":"c4","identifier":"lobe-cloud-sandbox"}],"tool_calls":[{"id":"c4"}]},
		{"id":"a3","role":"assistant","content":"plain"}
	]`)
	p := build(t, processors.NameDisabledToolCallFilter, map[string]any{"disabledToolIdentifiers": []any{"lobe-cloud-sandbox"}})
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[
		{"id":"a1","role":"assistant","content":"","tools":[{"id":"c2","identifier":"web"}],"tool_calls":[{"id":"c2","function":{"name":"web____search"}}]},
		{"id":"a2","role":"assistant","content":""},
		{"id":"a3","role":"assistant","content":"plain"}]`)
	assertJSON(t, out.Metadata, `{"disabledToolCallFilter":{"filteredAssistantMessages":2,"filteredToolCalls":3}}`)

	if out := process(t, processors.NewDisabledToolCallFilter(processors.DisabledToolCallFilterConfig{}), msgs); len(out.Metadata) != 0 {
		t.Fatal("ran without disabled tools")
	}
}
