package conversation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func msg(t testing.TB, fields string) *Message {
	t.Helper()
	var m Message
	if err := json.Unmarshal([]byte(fields), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// chain builds a linear user/assistant conversation of n messages.
func chain(n int) []*Message {
	out := make([]*Message, n)
	for i := range out {
		f := map[string]any{"id": fmt.Sprintf("m%d", i), "content": "x", "createdAt": float64(i)}
		if i%2 == 0 {
			f["role"] = "user"
		} else {
			f["role"] = "assistant"
		}
		if i > 0 {
			f["parentId"] = fmt.Sprintf("m%d", i-1)
		} else {
			f["parentId"] = nil
		}
		out[i] = MustMessage(f)
	}
	return out
}

func TestDeepChainParses(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	res, err := Parse(chain(n), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FlatList) != n {
		t.Fatalf("flatList has %d of %d messages", len(res.FlatList), n)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

// TestDeepBranchNesting nests a branch point at every level, the shape that
// makes the context tree recurse once per level.
func TestDeepBranchNesting(t *testing.T) {
	n := DefaultMaxBranchDepth
	var msgs []*Message
	parent := any(nil)
	for i := range n {
		id := fmt.Sprintf("u%d", i)
		msgs = append(msgs,
			MustMessage(map[string]any{"id": id, "role": "user", "parentId": parent, "createdAt": float64(3 * i)}),
			MustMessage(map[string]any{"id": id + "a", "role": "assistant", "parentId": id, "createdAt": float64(3*i + 1)}),
			MustMessage(map[string]any{"id": id + "b", "role": "assistant", "parentId": id, "createdAt": float64(3*i + 2)}),
		)
		parent = id + "b"
	}
	res, err := Parse(msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FlatList) != 2*n {
		t.Fatalf("flatList has %d entries, want %d", len(res.FlatList), 2*n)
	}
	enc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatalf("the default depth limit must keep output decodable: %v", err)
	}
	if _, err := Parse(msgs, nil, WithMaxBranchDepth(n-1)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("got %v, want ErrTooDeep", err)
	}
	if _, err := Parse(msgs, nil, WithMaxBranchDepth(0)); err != nil {
		t.Fatalf("no limit: %v", err)
	}
}

func TestMalformedInputs(t *testing.T) {
	cases := []struct {
		name  string
		input string
		ids   []string // ids expected in messageMap
	}{
		{"self parent", `[{"id":"a","role":"user","parentId":"a"}]`, []string{"a"}},
		{"two-cycle", `[{"id":"a","role":"user","parentId":"b"},{"id":"b","role":"assistant","parentId":"a"}]`, []string{"a", "b"}},
		{"cycle beside a root", `[{"id":"r","role":"user"},{"id":"a","role":"user","parentId":"b"},{"id":"b","role":"assistant","parentId":"a"}]`, []string{"r", "a", "b"}},
		{"duplicate ids", `[{"id":"a","role":"user","content":"1"},{"id":"b","role":"assistant","parentId":"a"},{"id":"a","role":"user","content":"2","parentId":"b"}]`, []string{"a", "b"}},
		{"duplicate id loop", `[{"id":"a","role":"user"},{"id":"b","role":"assistant","parentId":"a"},{"id":"a","role":"user","parentId":"b"}]`, []string{"a", "b"}},
		{"empty id and empty parent", `[{"id":"","role":"user"},{"id":"b","role":"assistant","parentId":""}]`, []string{"", "b"}},
		{"only empty parents", `[{"id":"a","role":"user","parentId":""},{"id":"b","role":"assistant","parentId":"a"}]`, []string{"a", "b"}},
		{"non-string parent", `[{"id":"a","role":"user","parentId":5},{"id":"b","role":"user","parentId":0}]`, []string{"a", "b"}},
		{"odd field types", `[{"id":"a","role":7,"tools":"x","metadata":"s","createdAt":"soon","agentId":{}},{"id":"b","role":"assistant","parentId":"a","tools":[1,null,{"id":{}}],"metadata":{"activeBranchIndex":-1,"signal":"yes"}}]`, []string{"a", "b"}},
		{"fractional branch index", `[{"id":"u","role":"user","metadata":{"activeBranchIndex":0.5}},{"id":"a","role":"assistant","parentId":"u"},{"id":"b","role":"assistant","parentId":"u"}]`, []string{"u", "a", "b"}},
		{"tool results shared by two assistants", `[{"id":"u","role":"user"},{"id":"a1","role":"assistant","parentId":"u","tools":[{"id":"c"}]},{"id":"t","role":"tool","parentId":"a1","tool_call_id":"c"},{"id":"a2","role":"assistant","parentId":"t","tools":[{"id":"c","result_msg_id":"t"}]}]`, []string{"u", "a1", "t", "a2"}},
		{"compressed group pointing at itself", `[{"id":"g","role":"compressedGroup","compressedMessages":[{"id":"g"}]},{"id":"x","role":"user","parentId":"g"}]`, []string{"g", "x"}},
		{"deeply nested compressed messages", `[{"id":"g","role":"compressedGroup","compressedMessages":[` + strings.Repeat(`{"compressedMessages":[`, 2000) + `{"id":"h"}` + strings.Repeat(`]}`, 2000) + `]},{"id":"x","role":"user","parentId":"h"}]`, []string{"g", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs, groups, err := DecodeInputBytes([]byte(c.input))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Parse(msgs, groups)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range c.ids {
				if _, ok := res.MessageMap.Get(id); !ok {
					t.Errorf("messageMap lacks %q", id)
				}
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]string{
		"not json":          `{`,
		"a number":          `5`,
		"no messages":       `{"messageGroups":[]}`,
		"entry not object":  `[{"id":"a"}, 3]`,
		"entry null":        `[null]`,
		"missing id":        `[{"role":"user"}]`,
		"numeric id":        `[{"id":1}]`,
		"groups not array":  `{"messages":[],"messageGroups":{}}`,
		"group not object":  `{"messages":[],"messageGroups":[1]}`,
		"messages not list": `{"messages":{"id":"a"}}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := DecodeInputBytes([]byte(in))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("error %v is neither ErrInvalidInput nor ErrInvalidMessage", err)
			}
		})
	}
}

func TestMessageLimit(t *testing.T) {
	_, err := Parse(chain(11), nil, WithMaxMessages(10))
	if !errors.Is(err, ErrTooManyMessages) {
		t.Fatalf("got %v, want ErrTooManyMessages", err)
	}
	if _, err := Parse(chain(10), nil, WithMaxMessages(10)); err != nil {
		t.Fatal(err)
	}
	// Limits past 32 bits: no limit at or below 0, a large one above.
	for _, n := range []int{-(1 << 32) + 5, math.MinInt, 0, 1 << 40, math.MaxInt} {
		if _, err := Parse(chain(10), nil, WithMaxMessages(n), WithMaxBranchDepth(n)); err != nil {
			t.Errorf("limit %d: %v", n, err)
		}
	}
}

func TestParseDoesNotChangeInput(t *testing.T) {
	in := `[{"id":"u","role":"user"},{"id":"a","role":"assistant","parentId":"u","agentId":"x","tools":[{"id":"c"}],"metadata":{"scope":"sub_agent","subAgentId":"s","usage":{"totalTokens":3},"isSupervisor":true}},{"id":"t","role":"tool","parentId":"a","tool_call_id":"c"}]`
	msgs, _, err := DecodeInputBytes([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(msgs)
	res, err := Parse(msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(msgs)
	if string(before) != string(after) {
		t.Fatalf("input changed:\n%s\n%s", before, after)
	}
}
