package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestTaskMessage(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"task","content":"42","agentName":"Calc","metadata":{"instruction":"Compute $& and {{content}}"}},
		{"id":"2","role":"task","content":"cost $$5 $' $1","meta":{"avatar":"🤖"},"metadata":{"instruction":"Price"}},
		{"id":"3","role":"task","metadata":{}},
		{"id":"4","role":"user","content":"x"}
	]`)
	out := process(t, processors.NewTaskMessage(processors.TaskMessageConfig{}), msgs)
	// Replacement follows JavaScript's replaceAll: "$&" inserts the matched
	// placeholder, "$$" a dollar, and a placeholder inside a value inserted
	// earlier is replaced too.
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"assistant","agentName":"Calc","metadata":{"instruction":"Compute $& and {{content}}"},
		 "content":"[Task Result from Calc]\n\n**Task Instruction:**\nCompute {{instruction}} and 42\n\n**Task Result:**\n42"},
		{"id":"2","role":"assistant","meta":{"avatar":"🤖"},"metadata":{"instruction":"Price"},
		 "content":"[Task Result from 🤖]\n\n**Task Instruction:**\nPrice\n\n**Task Result:**\ncost $5  $1"},
		{"id":"3","role":"assistant","content":"","metadata":{}},
		{"id":"4","role":"user","content":"x"}]`)
	assertJSON(t, out.Metadata, `{"taskMessagesProcessed":3}`)

	p := build(t, processors.NameTaskMessage, map[string]any{"template": "{{agentName}}: {{content}}"})
	if got := process(t, p, msgs[:1]).Messages[0]["content"]; got != "Calc: 42" {
		t.Fatalf("custom template: %q", got)
	}
}
