package conversation

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary documents to DecodeInput and Parse: either may
// refuse the input with an error, but neither may panic or hang, and a
// parsed result must encode and keep every message in its map.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`[]`,
		`[{"id":"a","role":"user"}]`,
		`[{"id":"a","role":"user","parentId":"a"}]`,
		`[{"id":"a","parentId":"b"},{"id":"b","parentId":"a"}]`,
		`[{"id":"a","role":"user"},{"id":"a","role":"user","parentId":"a"}]`,
		`{"messages":[{"id":"u","role":"user","metadata":{"compare":true}},{"id":"x","role":"assistant","parentId":"u","metadata":{"activeColumn":true}},{"id":"y","role":"assistant","parentId":"u"}]}`,
		`{"messages":[{"id":"u","role":"user"},{"id":"a","role":"assistant","parentId":"u","groupId":"g"}],"messageGroups":[{"id":"g","mode":"compare","parentMessageId":"u"}]}`,
		`[{"id":"u","role":"user"},{"id":"a","role":"assistant","parentId":"u","tools":[{"id":"c","result_msg_id":"t"}]},{"id":"t","role":"tool","parentId":"a","tool_call_id":"c","metadata":{"agentCouncil":true}},{"id":"m1","role":"assistant","parentId":"t"},{"id":"m2","role":"assistant","parentId":"t"}]`,
		`[{"id":"u","role":"user"},{"id":"t1","role":"task","parentId":"u","agentId":"a"},{"id":"t2","role":"task","parentId":"u","agentId":"b"},{"id":"s","role":"assistant","parentId":"t2","metadata":{"isSupervisor":true}}]`,
		`[{"id":"u","role":"user","metadata":{"activeBranchIndex":2}},{"id":"a","role":"assistant","parentId":"u"},{"id":"b","role":"assistant","parentId":"u"}]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	addConformanceSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, groups, err := DecodeInputBytes(data)
		if err != nil {
			return
		}
		res, err := Parse(msgs, groups, WithMaxMessages(10_000))
		if err != nil {
			return
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		for _, m := range msgs {
			if _, ok := res.MessageMap.Get(m.ID()); !ok {
				t.Fatalf("messageMap lacks %q", m.ID())
			}
		}
	})
}

// addConformanceSeeds adds every fifth input of the reference suite to a
// fuzz target's seeds: small conformance inputs make good seeds.
func addConformanceSeeds(f *testing.F) {
	f.Helper()
	if cases, err := filepath.Glob("testdata/conformance/reference-suite.jsonl.gz"); err == nil && len(cases) == 1 {
		for i, c := range readCases(f, cases[0]) {
			if i%5 == 0 {
				f.Add([]byte(c.Input))
			}
		}
	}
}
