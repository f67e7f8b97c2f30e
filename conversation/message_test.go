package conversation

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"
)

func TestMessageKeepsJSON(t *testing.T) {
	src := `{"id":"m1","role":"assistant","parentId":"u1","agentId":"agent-a","content":"<b>hi</b>\n","createdAt":1700000000000,"extra":{"z":1,"a":[true,null]},"tools":[{"id":"c1","result_msg_id":"t1"}]}`
	var fields map[string]any
	if err := json.Unmarshal([]byte(src), &fields); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(fields)
	var decoded map[string]any
	_ = json.Unmarshal(want, &decoded)

	m, err := NewMessage(fields)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := NewMessageJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// The caller's map is not the message's.
	fields["content"] = "changed"
	delete(fields, "extra")

	for _, x := range []*Message{m, fromJSON} {
		got, err := x.JSON()
		if err != nil || string(got) != string(want) {
			t.Fatalf("JSON: %s, %v; want %s", got, err, want)
		}
		if got, _ := x.MarshalJSON(); string(got) != string(want) {
			t.Fatalf("MarshalJSON: %s", got)
		}
		if !reflect.DeepEqual(x.Fields(), decoded) {
			t.Fatalf("Fields: %#v", x.Fields())
		}
		if v, ok := x.Get("extra"); !ok || !reflect.DeepEqual(v, decoded["extra"]) {
			t.Fatalf("Get extra: %#v, %v", v, ok)
		}
		if _, ok := x.Get("missing"); ok {
			t.Fatal("Get missing: present")
		}
		if x.Len() != len(decoded) {
			t.Fatalf("Len %d", x.Len())
		}
	}

	checkShared(t, m)
}

// checkShared checks that the decoded strings of m cost nothing beyond
// its stored JSON.
func checkShared(t *testing.T, m *Message) {
	t.Helper()
	strs := []string{m.id, m.role, m.parentID, m.agentID().s}
	for _, tr := range m.tools() {
		strs = append(strs, tr.id.s, tr.resultMsgID)
	}
	if sig := m.signal(); sig != nil {
		s, _ := sig.sourceToolCall.(string)
		strs = append(strs, sig.kind, s)
	}
	for _, s := range strs {
		if s != "" && !within(m.raw, s) {
			t.Errorf("%q is a copy, not part of the stored JSON", s)
		}
	}
}

// TestUpdateKeepsNothingOfTheOldJSON: an updated message's strings point
// into its own JSON, not into the old version's.
func TestUpdateKeepsNothingOfTheOldJSON(t *testing.T) {
	conv := NewConversation()
	for _, src := range []string{
		`{"id":"u","role":"user"}`,
		`{"id":"a","role":"assistant","parentId":"u","agentId":"ag","metadata":{"signal":{"type":"tool-callback","sourceToolCallId":"c9"}}}`,
	} {
		m, err := NewMessageJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := conv.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := conv.Update("a", map[string]any{"content": "more"}); err != nil {
		t.Fatal(err)
	}
	m, _ := conv.Get("a")
	if m.signal() == nil || m.agentID().s != "ag" {
		t.Fatalf("update lost fields: %+v", m)
	}
	checkShared(t, m)
}

func TestWithSubAgentMatchesWith(t *testing.T) {
	for _, sub := range []string{`"sub-1"`, `{"k":[1,"<"]}`, `7`} {
		src := `{"id":"a","role":"assistant","agentId":"parent","metadata":{"scope":"sub_agent","subAgentId":` + sub + `},"tools":[{"id":"c"}]}`
		m, err := NewMessageJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if m.flags&flagSubAgent == 0 {
			t.Fatalf("%s: not a sub-agent message", src)
		}
		got, want := m.withSubAgent(), m.With("agentId", m.x.rare.subAgentID)
		gj, _ := got.JSON()
		wj, _ := want.JSON()
		if string(gj) != string(wj) {
			t.Fatalf("withSubAgent: %s; With: %s", gj, wj)
		}
		if got.agentID().kind != want.agentID().kind || got.agentID().s != want.agentID().s || got.raw == "" {
			t.Fatalf("agentID %+v, want %+v", got.agentID(), want.agentID())
		}
		if m.agentID().s != "parent" {
			t.Fatal("the original changed")
		}
	}
}

// TestNewMessageReadsGoValuesAsJSON: a map with Go values that JSON does
// not decode to is indexed as its JSON reads, as every later read sees it.
func TestNewMessageReadsGoValuesAsJSON(t *testing.T) {
	m, err := NewMessage(map[string]any{
		"id":        "a",
		"role":      "assistant",
		"createdAt": 5,
		"tools":     []map[string]any{{"id": "c", "result_msg_id": "t"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.tools()) != 1 || m.tools()[0].resultMsgID != "t" || m.createdAt != 5 {
		t.Fatalf("tools %+v, createdAt %v", m.tools(), m.createdAt)
	}
	if _, err := NewMessage(map[string]any{"id": "a", "bad": func() {}}); err == nil {
		t.Fatal("a value JSON cannot encode was accepted")
	}
}

// TestNewMessageRefusesWhatCannotReadBack: fields nested deeper than
// decoding reads would read back wrong, so the message is refused.
func TestNewMessageRefusesWhatCannotReadBack(t *testing.T) {
	var v any = "leaf"
	for range maxJSONDepth + 2 {
		v = []any{v}
	}
	if _, err := NewMessage(map[string]any{"id": "a", "deep": v}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("err = %v", err)
	}
}

// TestNewMessageCanonicalReadsBackJSON: every message of the conformance
// inputs, rebuilt by NewMessageCanonical from its JSON, is the message it
// was, down to what the parser indexes, and shares its stored JSON.
// Anything but an object with a string id is still an error.
func TestNewMessageCanonicalReadsBackJSON(t *testing.T) {
	n := 0
	eachConformanceInput(t, func(name string, msgs []*Message, raws [][]byte) {
		for i, m := range msgs {
			got, err := NewMessageCanonical(raws[i])
			if err != nil {
				t.Fatalf("%s: %s: %v", name, raws[i], err)
			}
			if !sameMessage(got, m) {
				t.Fatalf("%s: %s read back as\n%#v, want\n%#v", name, raws[i], got, m)
			}
			checkShared(t, got)
			n++
		}
	})
	t.Logf("%d messages", n)
	for _, bad := range []string{``, `[1]`, `{"id":`, `{"id":1}`, `{"role":"user"}`, `{"id":"a"} x`} {
		if _, err := NewMessageCanonical([]byte(bad)); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

// eachConformanceInput calls fn with the messages of each conformance case
// whose input decodes, and the JSON each one stores.
func eachConformanceInput(t *testing.T, fn func(name string, msgs []*Message, raws [][]byte)) {
	t.Helper()
	files, err := filepath.Glob("testdata/conformance/*.jsonl.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	for _, file := range files {
		for _, c := range readCases(t, file) {
			msgs, _, err := DecodeInputBytes(c.Input)
			if err != nil {
				continue // the cases of malformed input
			}
			raws := make([][]byte, len(msgs))
			for i, m := range msgs {
				if raws[i], err = m.JSON(); err != nil {
					t.Fatal(err)
				}
			}
			fn(c.Name, msgs, raws)
		}
	}
}

// sameMessage reports whether a and b hold the same, NaN (an absent time)
// being equal to NaN.
func sameMessage(a, b *Message) bool {
	ca, cb := *a, *b
	for _, p := range [][2]*float64{{&ca.createdAt, &cb.createdAt}, {&ca.updatedAt, &cb.updatedAt}} {
		if math.IsNaN(*p[0]) && math.IsNaN(*p[1]) {
			*p[0], *p[1] = 0, 0
		}
	}
	return reflect.DeepEqual(ca, cb)
}
