package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestGroupOrchestrationFilter(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"1","role":"user","content":"plan a trip"},
		{"id":"2","role":"assistant","agentId":"sup","content":"","tools":[{"id":"c1","identifier":"lobe-group-management","apiName":"broadcast"}]},
		{"id":"3","role":"tool","agentId":"sup","tool_call_id":"c1","plugin":{"identifier":"lobe-group-management","apiName":"broadcast"}},
		{"id":"4","role":"assistant","agentId":"sup","content":"summary"},
		{"id":"5","role":"assistant","agentId":"sup","tools":[{"id":"c2","identifier":"web","apiName":"search"}]},
		{"id":"6","role":"assistant","agentId":"a1","tools":[{"id":"c3","identifier":"lobe-group-management","apiName":"speak"}]}
	]`)
	agents := map[string]processors.AgentInfo{"sup": {Role: "supervisor"}, "a1": {Role: "participant"}}
	p := processors.NewGroupOrchestrationFilter(processors.GroupOrchestrationFilterConfig{AgentMap: agents, CurrentAgentID: "a1"})
	out := process(t, p, msgs)
	var ids []any
	for _, m := range out.Messages {
		ids = append(ids, m["id"])
	}
	assertJSON(t, ids, `["1","4","5","6"]`)
	assertJSON(t, out.Metadata, `{"orchestrationFilterProcessed":{"assistantFiltered":1,"filteredCount":2,"toolFiltered":1}}`)

	// The supervisor sees its own coordination; disabled filters nothing.
	for _, cfg := range []processors.GroupOrchestrationFilterConfig{
		{AgentMap: agents, CurrentAgentID: "sup"},
		{AgentMap: agents, Enabled: new(bool)},
		{},
	} {
		if out := process(t, processors.NewGroupOrchestrationFilter(cfg), msgs); len(out.Messages) != len(msgs) || len(out.Metadata) != 0 {
			t.Fatalf("%+v filtered", cfg)
		}
	}

	// Custom tool lists replace the defaults.
	q := build(t, processors.NameGroupOrchestrationFilter, map[string]any{
		"agentMap":              map[string]any{"sup": map[string]any{"role": "supervisor", "name": "Boss"}},
		"orchestrationApiNames": []any{"search"}, "orchestrationToolIdentifiers": []any{"web"},
	})
	if out := process(t, q, msgs); len(out.Messages) != len(msgs)-1 {
		t.Fatalf("custom lists: %d messages", len(out.Messages))
	}
}
