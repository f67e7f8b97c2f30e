package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestToolCall(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"a1","role":"assistant","content":"","tools":[
			{"id":"c1","identifier":"lobe-web-browsing","apiName":"search","type":"builtin","arguments":"{\"q\": \"go","thoughtSignature":"ts"},
			{"id":"c2","identifier":"mcp_x","apiName":"run","type":"mcp"}]},
		{"id":"t1","role":"tool","tool_call_id":"c1","content":"results","plugin":{"identifier":"lobe-web-browsing","apiName":"search","type":"builtin"}},
		{"id":"t2","role":"tool","tool_call_id":"c9","content":"orphan","name":"stale"},
		{"id":"a2","role":"assistant","content":"hi","tool_calls":[]},
		{"id":"a3","role":"assistant","content":"plain"}
	]`)
	// Built from a spec, ToolCallProcessor names tools with ToolNameResolver.
	out := process(t, build(t, processors.NameToolCall, map[string]any{"model": "gpt-4o", "provider": "openai"}), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"a1","role":"assistant","content":"",
		 "tools":[{"id":"c1","identifier":"lobe-web-browsing","apiName":"search","type":"builtin","arguments":"{\"q\": \"go","thoughtSignature":"ts"},
		          {"id":"c2","identifier":"mcp_x","apiName":"run","type":"mcp"}],
		 "tool_calls":[
			{"id":"c1","type":"function","thoughtSignature":"ts","function":{"name":"lobe-web-browsing____search","arguments":"{\"q\":\"go\"}"}},
			{"id":"c2","type":"function","function":{"name":"mcp_x____run____mcp","arguments":"{}"}}]},
		{"id":"t1","role":"tool","tool_call_id":"c1","content":"results","name":"lobe-web-browsing____search",
		 "plugin":{"identifier":"lobe-web-browsing","apiName":"search","type":"builtin"}},
		{"id":"t2","role":"tool","tool_call_id":"c9","content":"orphan"},
		{"id":"a2","role":"assistant","content":"hi"},
		{"id":"a3","role":"assistant","content":"plain"}]`)
	assertJSON(t, out.Metadata, `{"toolCallProcessed":4,"toolCallsConverted":2,"toolMessagesConverted":2,"supportTools":true}`)

	// The processor's own default names tools "identifier.apiName".
	out = process(t, processors.NewToolCall(processors.ToolCallConfig{}), msgs[:2])
	if got := dig(out.Messages[0]["tool_calls"].([]any)[0], "function", "name"); got != "lobe-web-browsing.search" {
		t.Fatalf("default name = %v", got)
	}
}

func TestToolCallWithoutFunctionCalling(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"a1","role":"assistant","content":"","tools":[{"id":"c1","identifier":"x","apiName":"y"}],"tool_calls":[{"id":"c1"}]},
		{"id":"t1","role":"tool","tool_call_id":"c1","content":"r","name":"x.y","plugin":{"identifier":"x"}}
	]`)
	p := build(t, processors.NameToolCall, nil, processors.WithCapabilities(processors.Capabilities{FunctionCalling: processors.Unsupported}))
	out := process(t, p, msgs)
	assertJSON(t, out.Messages, `[{"id":"a1","role":"assistant","content":""},{"id":"t1","role":"user","content":"r"}]`)
	assertJSON(t, out.Metadata, `{"toolCallProcessed":2,"toolCallsConverted":1,"toolMessagesConverted":1,"supportTools":false}`)
}
