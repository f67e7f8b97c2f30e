package conversation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
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
	strs := []string{m.ID(), m.Role(), m.parentID(), m.agentID().s}
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

// TestNewMessageNamesTheIDKind: an id that is no string is refused with
// its kind named as the processors' config errors name it
// (jsvalue.TypeName): a Go number is a number, any other Go value that
// JSON does not decode to is named by its Go type.
func TestNewMessageNamesTheIDKind(t *testing.T) {
	for id, want := range map[any]string{
		nil: "got null", 5.0: "got number", 5: "got number", true: "got boolean",
		[1]string{"a"}: "got [1]string",
	} {
		_, err := NewMessage(map[string]any{"id": id})
		if !errors.Is(err, ErrInvalidMessage) || !strings.HasSuffix(err.Error(), "id must be a string, "+want) {
			t.Errorf("id %#v: err = %v, want one ending %q", id, err, want)
		}
	}
	_, err := NewMessage(map[string]any{"id": map[string]any{}})
	if err == nil || !strings.HasSuffix(err.Error(), "got object") {
		t.Errorf("object id: err = %v", err)
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
	if a.ID() != b.ID() || a.Role() != b.Role() || a.parentID() != b.parentID() {
		return false
	}
	// Equal strings may be spans of different places in raw.
	ca, cb := *a, *b
	ca.idAt, ca.roleAt, ca.parentAt = strAt{}, strAt{}, strAt{}
	cb.idAt, cb.roleAt, cb.parentAt = strAt{}, strAt{}, strAt{}
	for _, p := range [][2]*float64{{&ca.createdAt, &cb.createdAt}, {&ca.updatedAt, &cb.updatedAt}} {
		if math.IsNaN(*p[0]) && math.IsNaN(*p[1]) {
			*p[0], *p[1] = 0, 0
		}
	}
	return reflect.DeepEqual(ca, cb)
}

// TestMessageStringsOutsideItsJSON: an id, role or parentId whose JSON
// form has escapes is not a span of the message's JSON; the message keeps
// its own copy, and reads it back through every way a message is built,
// stored, copied and linked.
func TestMessageStringsOutsideItsJSON(t *testing.T) {
	type strs struct{ id, role, parent string }
	specs := []struct {
		want strs
		src  map[string]any
	}{
		{strs{"u<1", "user", ""}, map[string]any{"id": "u<1", "role": "user"}},
		{strs{"a\"2", "assist\u2028ant", "u<1"}, map[string]any{"id": "a\"2", "role": "assist\u2028ant", "parentId": "u<1"}},
		{strs{"s\t3", "assistant", "a\"2"}, map[string]any{"id": "s\t3", "role": "assistant", "parentId": "a\"2",
			"metadata": map[string]any{"scope": "sub_agent", "subAgentId": "sa&1"}}},
		{strs{"p4", "user", "s\t3"}, map[string]any{"id": "p4", "role": "user", "parentId": "s\t3"}},
	}
	check := func(how string, m *Message, want strs) {
		t.Helper()
		parent, _ := m.ParentID()
		if got := (strs{m.ID(), m.Role(), parent}); got != want {
			t.Errorf("%s: id, role, parent = %q, want %q", how, got, want)
		}
	}
	conv := NewConversation()
	var msgs []*Message
	for _, s := range specs {
		m, err := NewMessage(s.src)
		if err != nil {
			t.Fatal(err)
		}
		check("NewMessage", m, s.want)
		enc, _ := m.JSON()
		for how, build := range map[string]func([]byte) (*Message, error){"NewMessageJSON": NewMessageJSON, "NewMessageCanonical": NewMessageCanonical} {
			c, err := build(enc)
			if err != nil {
				t.Fatal(err)
			}
			check(how, c, s.want)
		}
		check("With", m.With("content", "x"), s.want)
		if m.flags&flagSubAgent != 0 {
			check("withSubAgent", m.withSubAgent(), s.want)
		}
		if err := conv.Append(m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	want := []string{"u<1", "a\"2", "s\t3", "p4"}
	flatIDs := func(flat []*Message) []string {
		var ids []string
		for _, m := range flat {
			ids = append(ids, m.ID())
		}
		return ids
	}
	flat, err := conv.FlatList()
	if err != nil || !reflect.DeepEqual(flatIDs(flat), want) {
		t.Fatalf("FlatList: %q, %v; want %q", flatIDs(flat), err, want)
	}
	res, err := Parse(msgs, nil)
	if err != nil || !reflect.DeepEqual(flatIDs(res.FlatList), want) {
		t.Fatalf("Parse: %q, %v; want %q", flatIDs(res.FlatList), err, want)
	}
	conv.Compact()
	for i, s := range specs {
		got, ok := conv.Get(s.want.id)
		if !ok {
			t.Fatalf("Get %q after Compact: absent", s.want.id)
		}
		check("in the conversation", got, specs[i].want)
	}
	if err := conv.Append(MustMessage(map[string]any{"id": "q5", "role": "user", "parentId": "p4"})); err != nil {
		t.Fatal(err)
	}
	if flat, err = conv.FlatList(); err != nil || len(flat) != 5 || flat[4].ID() != "q5" {
		t.Fatalf("FlatList after Compact and Append: %q, %v", flatIDs(flat), err)
	}
	// A message whose strings are all spans of its JSON needs no extras.
	if m := MustMessage(map[string]any{"id": "m1", "role": "user", "parentId": "u1"}); m.x != nil {
		t.Errorf("a plain message keeps extras: %+v", m.x)
	}
}

// TestMessageStructPointers: a message in a slab holds two pointers for
// the collector to scan, its JSON and its extras (see strAt). A field that
// adds one costs every cached message's mark (BenchmarkMarkLiveConversations).
func TestMessageStructPointers(t *testing.T) {
	var ptrs []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		switch typ.Kind() {
		case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			ptrs = append(ptrs, prefix)
		case reflect.Struct:
			for f := range typ.Fields() {
				walk(prefix+"."+f.Name, f.Type)
			}
		case reflect.Array:
			for i := range typ.Len() {
				walk(fmt.Sprintf("%s[%d]", prefix, i), typ.Elem())
			}
		}
	}
	walk("Message", reflect.TypeFor[Message]())
	if !reflect.DeepEqual(ptrs, []string{"Message.raw", "Message.x"}) {
		t.Errorf("Message's fields with pointers: %v, want [Message.raw Message.x]", ptrs)
	}
}
