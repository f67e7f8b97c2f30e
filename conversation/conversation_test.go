package conversation

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
)

func resultJSON(t testing.TB, r *Result) any { return jsonValue(t, r) }

// jsonValue encodes v and decodes it back into a generic JSON value.
func jsonValue(t testing.TB, v any) any {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(enc, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConversationMatchesParse appends the messages of conformance cases one
// at a time and compares with Parse of all of them.
func TestConversationMatchesParse(t *testing.T) {
	cases := readCases(t, filepath.Join("testdata", "conformance", "generated-normal.jsonl.gz"))
	for i, c := range cases {
		if i%10 != 0 {
			continue
		}
		msgs, groups, err := DecodeInputBytes(c.Input)
		if err != nil {
			t.Fatal(err)
		}
		conv := NewConversation()
		for _, g := range groups {
			if err := conv.UpsertGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range msgs {
			if err := conv.Append(m); err != nil {
				t.Fatalf("%s: append %s: %v", c.Name, m.ID(), err)
			}
		}
		tree, err := conv.ContextTree()
		if err != nil {
			t.Fatal(err)
		}
		got, err := conv.Result()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse(msgs, groups)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(resultJSON(t, want), resultJSON(t, got)); d != "" {
			t.Fatalf("%s: %s", c.Name, d)
		}
		if d := jsondiff.Diff(jsonValue(t, want.ContextTree), jsonValue(t, tree)); d != "" {
			t.Fatalf("%s: ContextTree: %s", c.Name, d)
		}
	}
}

func TestConversationEdits(t *testing.T) {
	conv := NewConversation(WithMaxMessages(4))
	for _, m := range []string{
		`{"id":"u","role":"user","content":"hi"}`,
		`{"id":"a","role":"assistant","parentId":"u","content":"one"}`,
		`{"id":"b","role":"assistant","parentId":"u","content":"two"}`,
	} {
		if err := conv.Append(msg(t, m)); err != nil {
			t.Fatal(err)
		}
	}
	// Redelivery of the same message is a no-op; a different one is refused.
	if err := conv.Append(msg(t, `{"id":"u","role":"user","content":"hi"}`)); err != nil {
		t.Fatalf("identical re-append: %v", err)
	}
	if err := conv.Append(msg(t, `{"id":"u","role":"user","content":"changed"}`)); !errors.Is(err, ErrMessageExists) {
		t.Fatalf("got %v, want ErrMessageExists", err)
	}

	// Switching the branch is a merge patch on the parent.
	if err := conv.Update("u", map[string]any{"metadata": map[string]any{"activeBranchIndex": 1.0}}); err != nil {
		t.Fatal(err)
	}
	res, err := conv.Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := res.FlatList[1].ID(); got != "b" {
		t.Fatalf("active branch shows %q, want b", got)
	}
	// null removes a field.
	if err := conv.Update("u", map[string]any{"metadata": nil}); err != nil {
		t.Fatal(err)
	}
	if m, _ := conv.Get("u"); m.Fields()["metadata"] != nil {
		t.Fatal("metadata not removed")
	}
	if err := conv.Update("u", map[string]any{"id": "v"}); !errors.Is(err, ErrInvalidPatch) {
		t.Fatalf("got %v, want ErrInvalidPatch", err)
	}
	if err := conv.Update("nope", map[string]any{}); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("got %v, want ErrMessageNotFound", err)
	}

	// A parent cycle is refused, by append or by update.
	if err := conv.Update("u", map[string]any{"parentId": "a"}); !errors.Is(err, ErrCycle) {
		t.Fatalf("got %v, want ErrCycle", err)
	}
	if err := conv.Append(msg(t, `{"id":"x","role":"user","parentId":"x"}`)); !errors.Is(err, ErrCycle) {
		t.Fatalf("got %v, want ErrCycle", err)
	}

	// The limit holds.
	if err := conv.Append(msg(t, `{"id":"c","role":"user","parentId":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if err := conv.Append(msg(t, `{"id":"d","role":"user"}`)); !errors.Is(err, ErrTooManyMessages) {
		t.Fatalf("got %v, want ErrTooManyMessages", err)
	}

	// Deleting a message keeps its children, as roots.
	if err := conv.Delete("u"); err != nil {
		t.Fatal(err)
	}
	if err := conv.Delete("u"); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("got %v, want ErrMessageNotFound", err)
	}
	if conv.Len() != 3 {
		t.Fatalf("len %d, want 3", conv.Len())
	}
	if err := conv.Append(msg(t, `{"id":"e","role":"user"}`)); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, m := range conv.Messages() {
		ids = append(ids, m.ID())
	}
	if want := `["a","b","c","e"]`; mustJSON(ids) != want {
		t.Fatalf("order %s, want %s", mustJSON(ids), want)
	}
}

func TestConversationCycleThroughOrphan(t *testing.T) {
	conv := NewConversation()
	// a waits for its parent b; b naming a as parent would close a loop.
	if err := conv.Append(msg(t, `{"id":"a","role":"user","parentId":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if err := conv.Append(msg(t, `{"id":"b","role":"assistant","parentId":"a"}`)); !errors.Is(err, ErrCycle) {
		t.Fatalf("got %v, want ErrCycle", err)
	}
	if err := conv.Append(msg(t, `{"id":"b","role":"assistant"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestPathTo(t *testing.T) {
	conv := NewConversation()
	for _, m := range []string{
		`{"id":"u","role":"user"}`,
		`{"id":"a","role":"assistant","parentId":"u","tools":[{"id":"c"}]}`,
		`{"id":"t","role":"tool","parentId":"a","tool_call_id":"c"}`,
		`{"id":"a2","role":"assistant","parentId":"t"}`,
		`{"id":"b","role":"assistant","parentId":"u"}`,
		`{"id":"u2","role":"user","parentId":"a2"}`,
	} {
		if err := conv.Append(msg(t, m)); err != nil {
			t.Fatal(err)
		}
	}
	path, err := conv.PathTo("a2")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range path {
		ids = append(ids, m.ID())
	}
	if want := `["u","a","t","a2"]`; mustJSON(ids) != want {
		t.Fatalf("path %s, want %s", mustJSON(ids), want)
	}
	if _, err := conv.PathTo("zz"); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("got %v", err)
	}
}

func TestMergePatch(t *testing.T) {
	target := map[string]any{"a": "b", "c": map[string]any{"d": "e", "f": "g"}}
	patch := map[string]any{"a": "z", "c": map[string]any{"f": nil}, "n": []any{1.0}}
	got := MergePatch(target, patch)
	if want := `{"a":"z","c":{"d":"e"},"n":[1]}`; mustJSON(got) != want {
		t.Fatalf("got %s, want %s", mustJSON(got), want)
	}
	if want := `{"a":"b","c":{"d":"e","f":"g"}}`; mustJSON(target) != want {
		t.Fatalf("target changed: %s", mustJSON(target))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestSubAgentMessageKeptAsGiven: the index shows a sub-agent's message
// with its sub-agent as agentId, in a copy; the conversation keeps the
// message as it was given, whether it arrives before the index is built or
// after (when the index shares the table's messages).
func TestSubAgentMessageKeptAsGiven(t *testing.T) {
	for _, before := range []int{0, 1, 5, 12} {
		conv := NewConversation()
		var srcs []string
		parent := ""
		add := func(id, src string) {
			t.Helper()
			m := mustMessage(t, src)
			if err := conv.Append(m); err != nil {
				t.Fatal(err)
			}
			if _, err := conv.FlatList(); err != nil {
				t.Fatal(err)
			}
			enc, _ := m.JSON()
			srcs = append(srcs, string(enc))
			parent = id
		}
		add("root", `{"id":"root","role":"user"}`)
		for i := range before {
			id := fmt.Sprintf("u%d", i)
			add(id, fmt.Sprintf(`{"id":%q,"role":"user","parentId":%q}`, id, parent))
		}
		for i := range 3 {
			id := fmt.Sprintf("s%d", i)
			add(id, fmt.Sprintf(`{"id":%q,"role":"assistant","parentId":%q,"agentId":"main","metadata":{"scope":"sub_agent","subAgentId":"sub"}}`, id, parent))
			id = fmt.Sprintf("v%d", i)
			add(id, fmt.Sprintf(`{"id":%q,"role":"user","parentId":%q}`, id, parent))
		}
		for i, m := range conv.Messages() {
			if enc, _ := m.JSON(); string(enc) != srcs[i] {
				t.Errorf("%d messages before: message %d kept as %s, given %s", before, i, enc, srcs[i])
			}
		}
	}
}

// TestRestoreUndoesUpdate: an update taken back with Restore leaves the
// conversation as Parse of the messages before it, whether the update
// moved the message or only changed its content, and the next append is
// applied as usual.
func TestRestoreUndoesUpdate(t *testing.T) {
	conv := NewConversation()
	for i := range 20 {
		f := fmt.Sprintf(`{"id":"m%d","role":"user","content":"c%d"}`, i, i)
		if i > 0 {
			f = fmt.Sprintf(`{"id":"m%d","role":"user","content":"c%d","parentId":"m%d"}`, i, i, i-1)
		}
		if err := conv.Append(msg(t, f)); err != nil {
			t.Fatal(err)
		}
	}
	checkAgainstParse(t, "built", 0, conv)
	want, err := conv.Result()
	if err != nil {
		t.Fatal(err)
	}
	for step, patch := range []map[string]any{
		{"content": strings.Repeat("x", 1000)},
		{"parentId": "m3"},
		{"parentId": nil},
	} {
		old, _ := conv.Get("m10")
		if err := conv.Update("m10", patch); err != nil {
			t.Fatal(err)
		}
		if err := conv.Restore(old); err != nil {
			t.Fatal(err)
		}
		checkAgainstParse(t, "restored", step, conv)
		got, err := conv.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(resultJSON(t, want), resultJSON(t, got)); d != "" {
			t.Fatalf("step %d: restored differs from before the update: %s", step, d)
		}
	}
	if err := conv.Append(msg(t, `{"id":"n","role":"user","content":"next","parentId":"m19"}`)); err != nil {
		t.Fatal(err)
	}
	checkAgainstParse(t, "appended", 0, conv)
	if err := conv.Restore(msg(t, `{"id":"absent","role":"user"}`)); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("restoring an absent message: %v, want ErrMessageNotFound", err)
	}
}
