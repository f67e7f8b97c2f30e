package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestMessageCleanup(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"s","role":"system","content":"sys","createdAt":1},
		{"id":"u","role":"user","content":[{"type":"text","text":"q"}],"meta":{}},
		{"id":"a","role":"assistant","content":"","tool_calls":[{"id":"c"}],"reasoning":{"content":"r"},"tools":[{"id":"c"}]},
		{"id":"a2","role":"assistant","content":"x","tool_calls":null,"reasoning":""},
		{"id":"t","role":"tool","content":"res","tool_call_id":"c","name":"x____y","plugin":{}},
		{"id":"t2","role":"tool","name":""},
		{"id":"v","role":"custom","content":"kept","extra":1}
	]`)
	out := process(t, processors.NewMessageCleanup(), msgs)
	assertJSON(t, out.Messages, `[
		{"role":"system","content":"sys"},
		{"role":"user","content":[{"type":"text","text":"q"}]},
		{"role":"assistant","content":"","tool_calls":[{"id":"c"}],"reasoning":{"content":"r"}},
		{"role":"assistant","content":"x"},
		{"role":"tool","content":"res","tool_call_id":"c","name":"x____y"},
		{"role":"tool"},
		{"id":"v","role":"custom","content":"kept","extra":1}]`)
	assertJSON(t, out.Metadata, `{"messageCleanup":{"cleanedCount":6,"totalMessages":7}}`)
}
