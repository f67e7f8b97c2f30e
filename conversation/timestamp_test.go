package conversation

import (
	"math"
	"slices"
	"testing"
)

// parseIDs parses a bare JSON array of messages and returns the ids of its
// flat list, in order.
func parseIDs(t *testing.T, doc string) []string {
	t.Helper()
	msgs, groups, err := DecodeInputBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(res.FlatList))
	for i, m := range res.FlatList {
		ids[i] = m.ID()
	}
	return ids
}

// TestTimestampISOStringsSortByTime ports upstream
// __tests__/stringTimestamp.test.ts: createdAt given as ISO 8601 strings
// orders a conversation by time, as numbers do.
func TestTimestampISOStringsSortByTime(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // the flat list; nil: check only before/after
		// before must come before after in the flat list.
		before, after string
	}{{
		// "orders a linear conversation chronologically when createdAt is ISO strings"
		name: "linear",
		doc: `[
			{"id":"msg-old","role":"user","content":"first","createdAt":"2026-10-10T11:30:00.000Z"},
			{"id":"msg-a-old","role":"assistant","content":"reply-old","parentId":"msg-old","createdAt":"2026-10-10T11:40:00.000Z"},
			{"id":"msg-new","role":"user","content":"second","parentId":"msg-a-old","createdAt":"2026-10-10T11:50:00.000Z"},
			{"id":"msg-a-new","role":"assistant","content":"reply-new","parentId":"msg-new","createdAt":"2026-10-10T11:55:00.000Z"}]`,
		want: []string{"msg-old", "msg-a-old", "msg-new", "msg-a-new"},
	}, {
		// "restores chronology when parallel tool continuations under
		// different agents are appended out of order": the walk meets
		// tool-1's newer continuation first; the older one, under tool-2,
		// must still come first.
		name: "parallel continuations",
		doc: `[
			{"id":"root","role":"user","content":"go","createdAt":"2026-10-10T11:20:00.000Z"},
			{"id":"a1","role":"assistant","content":"fan out","parentId":"root","createdAt":"2026-10-10T11:25:00.000Z",
			 "tools":[{"id":"tool-1","type":"default","apiName":"x","identifier":"p","arguments":"{}"},
			          {"id":"tool-2","type":"default","apiName":"y","identifier":"p","arguments":"{}"}]},
			{"id":"tool-1","role":"tool","content":"","parentId":"a1","tool_call_id":"tool-1","createdAt":"2026-10-10T11:26:00.000Z"},
			{"id":"tool-2","role":"tool","content":"","parentId":"a1","tool_call_id":"tool-2","createdAt":"2026-10-10T11:27:00.000Z"},
			{"id":"cont-new","role":"assistant","content":"newer continuation (tool-1)","parentId":"tool-1","agentId":"agent-a","createdAt":"2026-10-10T11:35:00.000Z"},
			{"id":"cont-old","role":"assistant","content":"older continuation (tool-2)","parentId":"tool-2","agentId":"agent-b","createdAt":"2026-10-10T11:30:00.000Z"}]`,
		before: "cont-old", after: "cont-new",
	}, {
		// "does not regress numeric createdAt conversations"
		name: "numbers",
		doc: `[
			{"id":"m1","role":"user","content":"a","createdAt":1791633570000},
			{"id":"m2","role":"assistant","content":"b","parentId":"m1","createdAt":1791633580000},
			{"id":"m3","role":"user","content":"c","parentId":"m2","createdAt":1791633590000}]`,
		want: []string{"m1", "m2", "m3"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseIDs(t, tc.doc)
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("flat list %v, want %v", got, tc.want)
			}
			if tc.before != "" {
				i, j := slices.Index(got, tc.before), slices.Index(got, tc.after)
				if i < 0 || j < 0 || i > j {
					t.Fatalf("flat list %v: want %s before %s", got, tc.before, tc.after)
				}
			}
		})
	}
}

// TestTimeOf: numbers keep their JavaScript value, ISO strings become
// epoch milliseconds, anything else stays NaN (upstream utils/timestamp.ts
// toTime, with JavaScript's Number for non-dates).
func TestTimeOf(t *testing.T) {
	tests := []struct {
		v    any
		want float64
	}{
		{float64(1704067200000), 1704067200000},
		{"1704067200000", 1704067200000},
		{"2024-01-01T00:00:00Z", 1704067200000},
		{"2024-01-01T00:00:00.123Z", 1704067200123},
		{"2024-01-01T02:00:00+02:00", 1704067200000},
		{"2024-01-01T00:00:00", 1704067200000},
		{"2024-01-01", 1704067200000},
		{nil, 0},
		{"yesterday", math.NaN()},
		{"2024-13-01T00:00:00Z", math.NaN()},
		{map[string]any{}, math.NaN()},
	}
	for _, tc := range tests {
		got := timeOf(tc.v, true)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("timeOf(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if got := timeOf(nil, false); !math.IsNaN(got) {
		t.Errorf("timeOf(absent) = %v, want NaN", got)
	}
}
