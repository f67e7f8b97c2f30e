package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestTasksFlatten(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"b1","role":"groupTasks","parentId":"p","threadId":"t","groupId":"g","topicId":"tp","tasks":[
			{"id":"k1","role":"assistant","content":"one","agentId":"x"},
			{"id":"k2","content":"two","parentId":"own"}]},
		{"id":"b2","role":"tasks","tasks":[]},
		{"id":"u","role":"user","content":"after"}
	]`)
	out := process(t, processors.NewTasksFlatten(), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"k1","role":"task","content":"one","agentId":"x","parentId":"p","threadId":"t","groupId":"g","topicId":"tp"},
		{"id":"k2","role":"task","content":"two","parentId":"own","threadId":"t","groupId":"g","topicId":"tp"},
		{"id":"u","role":"user","content":"after"}]`)
	assertJSON(t, out.Metadata, `{"tasksFlattenProcessed":1,"tasksMessagesFlattened":1,"taskMessagesCreated":2}`)
	if msgs[0]["tasks"].([]any)[0].(map[string]any)["role"] != "assistant" {
		t.Fatal("a task of the input was modified")
	}
}
