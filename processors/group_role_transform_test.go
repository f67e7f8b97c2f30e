package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestGroupRoleTransform(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"user","content":"Weather in Paris?"},
		{"id":"2","role":"assistant","agentId":"b","content":[{"type":"text","text":"Checking"},{"type":"image_url"},{"type":"text"}],
		 "tools":[{"id":"c1","identifier":"weather","apiName":"get","arguments":"{\"city\":\"Paris\"}"},{"identifier":"solo"}]},
		{"id":"3","role":"tool","agentId":"b","tool_call_id":"c1","content":"Sunny","plugin":{"identifier":"weather","apiName":"get"}},
		{"id":"4","role":"assistant","agentId":"a","content":"Mine"},
		{"id":"5","role":"assistant","agentId":"stranger","content":"Unknown"}
	]`)
	p := processors.NewGroupRoleTransform(processors.GroupRoleTransformConfig{
		CurrentAgentID: "a",
		AgentMap:       map[string]processors.AgentInfo{"a": {Name: "Advisor"}, "b": {Name: "Weather Expert"}},
	})
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[
		{"id":"1","role":"user","content":"Weather in Paris?"},
		{"id":"2","role":"user","agentId":"b","content":"<speaker name=\"Weather Expert\" />\nChecking\n\n\n<tool_use>\n<tool id=\"c1\" name=\"weather.get\">\n{\"city\":\"Paris\"}\n</tool>\n<tool id=\"unknown\" name=\"solo\">\n\n</tool>\n</tool_use>"},
		{"id":"3","role":"user","agentId":"b","content":"<speaker name=\"Weather Expert\" />\n<tool_result id=\"c1\" name=\"weather.get\">\nSunny\n</tool_result>"},
		{"id":"4","role":"assistant","agentId":"a","content":"Mine"},
		{"id":"5","role":"assistant","agentId":"stranger","content":"Unknown"}]`)
	assertJSON(t, out.Metadata, `{"groupRoleTransformProcessed":{"assistantTransformed":1,"toolTransformed":1}}`)

	if out := process(t, processors.NewGroupRoleTransform(processors.GroupRoleTransformConfig{AgentMap: map[string]processors.AgentInfo{}}), msgs); len(out.Metadata) != 0 {
		t.Fatal("transformed without a current agent")
	}
}
