package processors_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// fullEngine builds every built-in processor, configured so that each one
// has work to do, in the default order.
func fullEngine(t testing.TB) *enginecore.Engine {
	t.Helper()
	spec := processors.DefaultSpec()
	configure := map[string]map[string]any{
		processors.NameHistoryTruncate:    {"enableHistoryCount": true, "historyCount": 50.0},
		processors.NameSystemRoleInjector: {"systemRole": "Role"},
		processors.NameModelInfo:          {"displayName": "M", "modelId": "m", "knowledgeCutoff": "2024"},
		processors.NameToolSystemRole:     {"manifests": []any{map[string]any{"identifier": "t", "api": []any{map[string]any{"name": "a"}}}}},
		processors.NameHistorySummary:     {"historySummary": "S"},
		processors.NameUserMemoryInjector: {"memories": map[string]any{"preferences": []any{map[string]any{"conclusionDirectives": "P"}}}},
		processors.NameKnowledgeInjector:  {"knowledgeBases": []any{map[string]any{"id": "k", "name": "K"}}},
		processors.NameInputTemplate:      {"inputTemplate": "> {{text}}"},
		processors.NameGroupOrchestrationFilter: {
			"agentMap": map[string]any{"sup": map[string]any{"role": "supervisor"}, "a": map[string]any{"role": "participant"}}, "currentAgentId": "a"},
		processors.NameGroupRoleTransform:     {"agentMap": map[string]any{"b": map[string]any{"name": "B"}}, "currentAgentId": "a"},
		processors.NamePlaceholderVariables:   {"variableGenerators": map[string]any{"x": "X"}},
		processors.NameDisabledToolCallFilter: {"disabledToolIdentifiers": []any{"off"}},
	}
	for name, cfg := range configure {
		if err := spec.Configure(name, cfg); err != nil {
			t.Fatal(err)
		}
	}
	e, err := processors.Default(processors.WithClock(fixedClock)).Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFullPipelineOnRecordedInputs runs every built-in processor, in
// order, over the input of each recorded call: nothing may fail, panic or
// touch the input.
func TestFullPipelineOnRecordedInputs(t *testing.T) {
	e := fullEngine(t)
	for _, r := range loadRecords(t) {
		pc := r.context()
		before := snapshot(pc)
		if _, err := e.ProcessContext(context.Background(), pc); err != nil {
			t.Fatalf("line %d: %v", r.line, err)
		}
		if snapshot(pc) != before {
			t.Fatalf("line %d: input modified", r.line)
		}
	}
}

// FuzzPipeline feeds arbitrary JSON messages to every processor: odd
// field types must not make any of them fail or panic.
func FuzzPipeline(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi {{x}}","imageList":[{"url":5}]}]`)
	f.Add(`[{"role":"assistantGroup","children":[{"tools":[{"result":{"content":1}}]},null,7]},{"role":"agentCouncil","members":[null,{"role":"assistantGroup","children":"x"}]}]`)
	f.Add(`[{"role":"assistant","tools":"x","tool_calls":[null,{"id":3,"function":"f"}],"metadata":{"reactions":[null,{"emoji":1}]}},{"role":"tool","tool_call_id":3,"pluginError":{"message":7}}]`)
	f.Add(`[{"role":"tasks","tasks":[1,null,{"parentId":0}]},{"role":"task","metadata":{"instruction":{}},"content":[]},{"role":"verify","content":7},{"role":"taskCallback","content":"x","metadata":{"taskCallback":"s"}}]`)
	f.Add(`[{"id":{},"parentId":[],"role":"task"},{"id":"a","role":"assistant","agentId":"b","tools":[{"id":"a"}],"content":{"k":1}},{"role":"supervisor","agentId":"sup","tools":[{"identifier":"lobe-group-management","apiName":"speak"}]}]`)
	f.Add(`[{"role":"user","content":[null,{"type":"text","text":null},{"type":"image_url"}],"fileList":[null,{"id":1}],"videoList":[{}],"audioList":[7]},{"role":"assistant","reasoning":{"isMultimodal":true,"content":"[{\"type\":\"image\"}]"},"metadata":{"isMultimodal":true},"content":"[1]"}]`)
	f.Add(`[{"role":"compressedGroup","content":["a",{"b":1}]},{"role":"system","content":[1,2]},{"meta":{"systemInjection":true},"role":"user","content":null}]`)
	for _, r := range loadRecords(f) {
		b, _ := json.Marshal(r.Input.Messages)
		f.Add(string(b))
	}
	e := fullEngine(f)
	f.Fuzz(func(t *testing.T, doc string) {
		var raw []any
		if json.Unmarshal([]byte(doc), &raw) != nil {
			return
		}
		msgs := make([]enginecore.Message, 0, len(raw))
		for _, m := range raw {
			if obj, ok := m.(map[string]any); ok {
				msgs = append(msgs, obj)
			}
		}
		before, _ := json.Marshal(msgs)
		if _, err := e.Process(context.Background(), msgs); err != nil {
			t.Fatalf("%v\ninput: %s", err, doc)
		}
		if after, _ := json.Marshal(msgs); string(after) != string(before) {
			t.Fatalf("input modified: %s", doc)
		}
	})
}
