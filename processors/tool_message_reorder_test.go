package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestToolMessageReorder(t *testing.T) {
	msgs := parseMessages(t, `[
		{"role":"user","content":"go"},
		{"role":"tool","tool_call_id":"c2","content":"second"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f1"}},{"id":"c2"},{"id":"c1"},{"id":""},{"id":"c3","function":{"name":"f3"}},{"id":"c4"}]},
		{"role":"tool","tool_call_id":"c1","content":"first"},
		{"role":"tool","tool_call_id":"c1","content":"duplicate"},
		{"role":"tool","tool_call_id":"zz","content":"orphan"},
		{"role":"tool","content":"no id"},
		{"role":"tool","tool_call_id":"c4","content":"","pluginError":{"message":"timeout"}},
		{"role":"assistant","content":"done"}
	]`)
	out := process(t, processors.NewToolMessageReorder(), msgs)
	assertJSON(t, out.Messages, `[
		{"role":"user","content":"go"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f1"}},{"id":"c2"},{"id":"c3","function":{"name":"f3"}},{"id":"c4"}]},
		{"role":"tool","tool_call_id":"c1","content":"first"},
		{"role":"tool","tool_call_id":"c2","content":"second"},
		{"role":"tool","tool_call_id":"c3","name":"f3","content":"{\"error\":\"Tool call failed\",\"success\":false,\"synthetic\":true}"},
		{"role":"tool","tool_call_id":"c4","content":"timeout","pluginError":{"message":"timeout"}},
		{"role":"assistant","content":"done"}]`)
	assertJSON(t, out.Metadata, `{"toolMessageReorder":{"originalCount":9,"removedInvalidTools":3,"reorderedCount":7}}`)
}
