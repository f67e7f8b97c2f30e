package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestGroupMessageFlatten(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"u1","role":"user","content":"weather?"},
		{"id":"g1","role":"assistantGroup","createdAt":1,"updatedAt":2,"meta":{"title":"A"},"parentId":"u1","agentId":"ag","topicId":"tp",
		 "children":[
			{"id":"c1","content":"checking","reasoning":{"content":"think"},"tools":[
				{"id":"call1","identifier":"weather","apiName":"get","arguments":"{}","type":"builtin",
				 "result":{"id":"r1","content":"sunny","state":{"s":1},"error":null}},
				{"id":"call2","identifier":"weather","apiName":"get","arguments":"{}","type":"builtin"}]},
			{"id":"c2","content":null,"error":{"message":"boom"}}]},
		{"id":"g2","role":"supervisor","children":[]},
		{"id":"g3","role":"assistantGroup","content":"no children key"}
	]`)
	out := process(t, processors.NewGroupMessageFlatten(), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"u1","role":"user","content":"weather?"},
		{"id":"c1","role":"assistant","content":"checking","createdAt":1,"updatedAt":2,"meta":{"title":"A"},"parentId":"u1","agentId":"ag","topicId":"tp",
		 "reasoning":{"content":"think"},
		 "tools":[{"id":"call1","identifier":"weather","apiName":"get","arguments":"{}","type":"builtin"},
		          {"id":"call2","identifier":"weather","apiName":"get","arguments":"{}","type":"builtin"}]},
		{"id":"r1","role":"tool","content":"sunny","createdAt":1,"updatedAt":2,"meta":{"title":"A"},"parentId":"u1","topicId":"tp",
		 "plugin":{"id":"call1","identifier":"weather","apiName":"get","arguments":"{}","type":"builtin"},
		 "pluginState":{"s":1},"tool_call_id":"call1"},
		{"id":"c2","role":"assistant","content":"","createdAt":1,"updatedAt":2,"meta":{"title":"A"},"parentId":"u1","agentId":"ag","topicId":"tp",
		 "error":{"message":"boom"}},
		{"id":"g3","role":"assistantGroup","content":"no children key"}]`)
	assertJSON(t, out.Metadata, `{"groupMessagesFlattenProcessed":1,"groupMessagesFlattened":1,"assistantMessagesCreated":2,"toolMessagesCreated":1}`)

	// Nothing to flatten: the same slice comes back.
	plain := msgs[:1]
	if out := process(t, processors.NewGroupMessageFlatten(), plain); &out.Messages[0] != &plain[0] {
		t.Fatal("unchanged list was copied")
	}
}
