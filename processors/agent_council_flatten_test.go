package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestAgentCouncilFlatten(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"council","role":"agentCouncil","createdAt":10,"updatedAt":11,"meta":{"m":"council"},"extra":{"parentMessageId":"u1"},
		 "members":[
			{"id":"m1","role":"assistant","content":"plain","agentId":"a1","model":"gpt","provider":"openai","threadId":"th"},
			{"id":"m2","role":"assistantGroup","agentId":"a2","createdAt":20,"parentId":"p2","children":[
				{"id":"m2c1","content":"step","tools":[{"id":"k1","identifier":"x","apiName":"y","result":{"id":"m2r1","content":"done","error":{"e":1}}}]}]}
		 ]},
		{"id":"empty","role":"agentCouncil","members":[]}
	]`)
	out := process(t, processors.NewAgentCouncilFlatten(), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"m1","role":"assistant","content":"plain","createdAt":10,"updatedAt":11,"meta":{"m":"council"},"agentId":"a1","model":"gpt","provider":"openai","parentId":"u1","threadId":"th"},
		{"id":"m2c1","role":"assistant","content":"step","createdAt":20,"updatedAt":11,"meta":{"m":"council"},"agentId":"a2","parentId":"p2",
		 "tools":[{"id":"k1","identifier":"x","apiName":"y"}]},
		{"id":"m2r1","role":"tool","content":"done","createdAt":20,"updatedAt":11,"meta":{"m":"council"},"parentId":"p2",
		 "plugin":{"id":"k1","identifier":"x","apiName":"y"},"pluginError":{"e":1},"tool_call_id":"k1"}]`)
	assertJSON(t, out.Metadata, `{"agentCouncilFlattenProcessed":1,"agentCouncilMessagesFlattened":1,"agentCouncilAssistantMessagesCreated":2,"agentCouncilToolMessagesCreated":1}`)
}
