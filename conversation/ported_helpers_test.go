package conversation

import (
	"encoding/json"
	"testing"
)

// parseDoc parses a JSON array of messages (or a messages document).
func parseDoc(t *testing.T, doc string) *Result {
	t.Helper()
	msgs, groups, err := DecodeInputBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// renderedFlat returns the flat list as generic JSON values and as text.
func renderedFlat(t *testing.T, res *Result) ([]any, string) {
	t.Helper()
	b, err := json.Marshal(res.FlatList)
	if err != nil {
		t.Fatal(err)
	}
	var v []any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v, string(b)
}

// idsAnywhere returns every "id" string at any depth of v, counted: it
// reads the JSON a client reads, not the parser's own idea of what nests.
func idsAnywhere(v any) map[string]int {
	out := map[string]int{}
	stack := []any{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch t := v.(type) {
		case []any:
			stack = append(stack, t...)
		case map[string]any:
			if id, ok := t["id"].(string); ok {
				out[id]++
			}
			for _, x := range t {
				stack = append(stack, x)
			}
		}
	}
	return out
}

// topIDs returns the ids of the flat list's own entries.
func topIDs(res *Result) []string {
	ids := make([]string, len(res.FlatList))
	for i, m := range res.FlatList {
		ids[i] = m.ID()
	}
	return ids
}
