package conversation

import (
	"fmt"
	"slices"
	"testing"
)

// deepChain builds one parentId chain of rounds user turns, each followed by
// steps assistant steps (each with a tool call and its result when
// withTools), as upstream __tests__/deepChain.test.ts does.
func deepChain(t *testing.T, rounds, steps int, withTools bool) []*Message {
	t.Helper()
	var msgs []*Message
	parent := any(nil)
	at := 0
	add := func(f map[string]any) {
		at++
		f["createdAt"], f["updatedAt"], f["meta"] = float64(at), float64(at), map[string]any{}
		if parent != nil {
			f["parentId"] = parent
		}
		m, err := NewMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
		parent = f["id"]
	}
	for r := range rounds {
		add(map[string]any{"id": fmt.Sprintf("u%d", r), "role": "user", "content": fmt.Sprintf("q%d", r)})
		for s := range steps {
			call := fmt.Sprintf("call_%d_%d", r, s)
			a := map[string]any{"id": fmt.Sprintf("a%d_%d", r, s), "role": "assistant", "content": fmt.Sprintf("a%d.%d", r, s)}
			if withTools {
				a["tools"] = []any{map[string]any{"apiName": "run", "arguments": "{}", "id": call, "identifier": "demo", "type": "default"}}
			}
			add(a)
			if withTools {
				add(map[string]any{"id": fmt.Sprintf("t%d_%d", r, s), "role": "tool", "content": "ok", "tool_call_id": call})
			}
		}
	}
	return msgs
}

// TestParseDeepChain ports upstream __tests__/deepChain.test.ts: chains thousands
// of messages deep parse without recursion per message.
func TestParseDeepChain(t *testing.T) {
	t.Run("parses a 4,000-message plain chain without overflowing the stack", func(t *testing.T) {
		res, err := Parse(deepChain(t, 200, 19, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := topIDs(res)
		if ids[0] != "u0" || ids[len(ids)-1] != "a199_18" {
			t.Fatalf("flat list runs %s … %s", ids[0], ids[len(ids)-1])
		}
		users := 0
		for _, m := range res.FlatList {
			if m.Role() == "user" {
				users++
			}
		}
		treeUsers := 0
		for _, n := range res.ContextTree {
			if id := n.ID; len(id) > 0 && id[0] == 'u' {
				treeUsers++
			}
		}
		if users != 200 || treeUsers != 200 {
			t.Fatalf("%d users in the flat list, %d in the context tree; want 200", users, treeUsers)
		}
	})
	t.Run("parses a 4,000-message tool-call chain without overflowing the stack", func(t *testing.T) {
		res, err := Parse(deepChain(t, 200, 10, true), nil)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range res.FlatList {
			roles = append(roles, m.Role())
		}
		want := slices.Repeat([]string{"user", "assistantGroup"}, 200)
		if !slices.Equal(roles, want) {
			t.Fatalf("roles %v", roles[:min(len(roles), 8)])
		}
		last, _ := res.FlatList[len(res.FlatList)-1].Get("children")
		if kids, _ := last.([]any); len(kids) != 10 {
			t.Fatalf("last group has %d children, want 10", len(kids))
		}
	})
}
