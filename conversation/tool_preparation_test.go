package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const (
	originalArgs  = `{"content":"A","path":"A.txt"}`
	effectiveArgs = `{"content":"B","path":"B.txt"}`
)

// preparedTurn is upstream's turn(index, parentId, args): an assistant
// calling fs.write with originalArgs, and its tool result whose plugin
// carries args, an intervention of status and (when prepared) a
// hookPreparation of originalArgs → args.
func preparedTurn(index int, parent, args, status string, prepared bool) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	state := ""
	if prepared {
		state = fmt.Sprintf(`,"pluginState":{"hookPreparation":{"status":"ready","originalArgs":%s,"effectiveArgs":%s}}`, originalArgs, args)
	}
	return fmt.Sprintf(`{"content":"","createdAt":%d,"updatedAt":%d,"id":"assistant-%d","parentId":%q,"role":"assistant",
		"tools":[{"id":"native","identifier":"fs","apiName":"write","type":"builtin","arguments":%s}]},
	{"content":"","createdAt":%d,"updatedAt":%d,"id":"tool-%d","parentId":"assistant-%d","role":"tool","tool_call_id":"native",
		"plugin":{"identifier":"fs","apiName":"write","type":"builtin","arguments":%s},"pluginIntervention":{"status":%q}%s}`,
		index*2, index*2, index, parent, q(originalArgs), index*2+1, index*2+1, index, index, q(args), status, state)
}

const preparedUser = `{"id":"user","role":"user","content":"write","createdAt":0,"updatedAt":0}`

// projectedTools returns the tools of the children of every flat list entry.
func projectedTools(t *testing.T, doc string) []map[string]any {
	t.Helper()
	flat, _ := renderedFlat(t, parseDoc(t, doc))
	var out []map[string]any
	for _, e := range flat {
		em, _ := e.(map[string]any)
		kids, _ := em["children"].([]any)
		for _, k := range kids {
			km, _ := k.(map[string]any)
			tools, _ := km["tools"].([]any)
			for _, tl := range tools {
				if tm, ok := tl.(map[string]any); ok {
					out = append(out, tm)
				}
			}
		}
	}
	return out
}

// TestParseToolPreparation ports upstream
// __tests__/parse.toolPreparation.test.ts: a tool call whose arguments a
// hook prepared (pluginState.hookPreparation.effectiveArgs) or a person
// edited (the tool result's plugin.arguments).
//
// The newer upstream projects the tool result's persisted input onto the
// assistant's tool call; the 2026-08-23 reference, which Parse follows,
// keeps the assistant's own arguments. Where that differs the subtest
// asserts Parse's (the reference's) result and names upstream's. That the
// input messages are left unchanged holds in both.
func TestParseToolPreparation(t *testing.T) {
	for _, status := range []string{"pending", "approved"} {
		t.Run("uses the durable "+status+" tool input without mutating original history", func(t *testing.T) {
			doc := "[" + preparedUser + "," + preparedTurn(1, "user", effectiveArgs, status, true) + "]"
			msgs, groups, err := DecodeInputBytes([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(msgs)
			if _, err := Parse(msgs, groups); err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(msgs); string(after) != string(before) {
				t.Fatal("Parse changed its input")
			}
			tools := projectedTools(t, doc)
			if len(tools) != 1 || tools[0]["id"] != "native" || tools[0]["result_msg_id"] != "tool-1" {
				t.Fatalf("tools %v", tools)
			}
			// Upstream: arguments are effectiveArgs. Reference: the
			// assistant's own originalArgs.
			if tools[0]["arguments"] != originalArgs {
				t.Fatalf("arguments %v, want the reference's %s", tools[0]["arguments"], originalArgs)
			}
			// Upstream: intervention {status}, and result.state carries the
			// hookPreparation.
			iv, _ := tools[0]["intervention"].(map[string]any)
			if iv["status"] != status {
				t.Errorf("intervention %v, want status %s", tools[0]["intervention"], status)
			}
			res, _ := tools[0]["result"].(map[string]any)
			st, _ := res["state"].(map[string]any)
			if _, ok := st["hookPreparation"]; !ok {
				t.Errorf("result.state %v, want hookPreparation", res["state"])
			}
			// Stable: parsing a copy projects the same.
			again := projectedTools(t, doc)
			a, _ := json.Marshal(again)
			b, _ := json.Marshal(tools)
			if string(a) != string(b) {
				t.Errorf("second parse differs: %s vs %s", a, b)
			}
		})
	}
	t.Run("keeps reused native IDs scoped to their own assistant turn", func(t *testing.T) {
		later := `{"content":"C","path":"C.txt"}`
		doc := "[" + preparedUser + "," + preparedTurn(1, "user", effectiveArgs, "pending", true) + "," +
			preparedTurn(2, "tool-1", later, "pending", true) + "]"
		tools := projectedTools(t, doc)
		var got []string
		for _, tl := range tools {
			got = append(got, fmt.Sprintf("%v@%v", tl["arguments"], tl["result_msg_id"]))
		}
		// Upstream: effectiveArgs@tool-1, later@tool-2. Reference: the
		// assistants' own arguments, and a group looks its tool results up
		// by tool_call_id across all its steps (the last result wins), so
		// both calls named "native" show tool-2.
		want := []string{originalArgs + "@tool-2", originalArgs + "@tool-2"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("tools %v, want the reference's %v", got, want)
		}
	})
	t.Run("preserves legacy and streaming inputs without a persisted preparation", func(t *testing.T) {
		turn := preparedTurn(1, "user", effectiveArgs, "pending", false)
		for _, doc := range []string{
			"[" + preparedUser + "," + turn + "]",
			"[" + preparedUser + "," + turn[:strings.Index(turn, "},\n\t{")+1] + "]",
		} {
			if tools := projectedTools(t, doc); len(tools) != 1 || tools[0]["arguments"] != originalArgs {
				t.Fatalf("tools %v, want arguments %s", tools, originalArgs)
			}
		}
	})
	t.Run("uses the persisted input after a human edit, preserving the original hook snapshot", func(t *testing.T) {
		doc := "[" + preparedUser + "," + preparedTurn(1, "user", effectiveArgs, "pending", true) + "]"
		doc = strings.Replace(doc, `"plugin":{"identifier":"fs","apiName":"write","type":"builtin","arguments":"`+strings.ReplaceAll(effectiveArgs, `"`, `\"`)+`"}`,
			`"plugin":{"identifier":"fs","apiName":"write","type":"builtin","arguments":"{}"}`, 1)
		if !strings.Contains(doc, `"arguments":"{}"`) {
			t.Fatal("edit not applied to the fixture")
		}
		tools := projectedTools(t, doc)
		// Upstream: arguments "{}". Reference: originalArgs.
		if len(tools) != 1 || tools[0]["arguments"] != originalArgs {
			t.Fatalf("tools %v, want the reference's arguments %s", tools, originalArgs)
		}
		res, _ := tools[0]["result"].(map[string]any)
		st, _ := res["state"].(map[string]any)
		if _, ok := st["hookPreparation"]; !ok {
			t.Errorf("result.state %v, want hookPreparation", res["state"])
		}
	})
}
