package processors_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/convstream/convstream/processors"
)

func historyCount(n int) *int { return &n }

func TestHistoryTruncateKeepsGroupsWhole(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"u1","role":"user","content":"q1"},
		{"id":"a1","role":"assistant","content":"a1"},
		{"id":"u2","role":"user","content":"q2","parentId":"a1"},
		{"id":"a2","role":"assistant","content":"","parentId":"u2","tools":[{"id":"t1"},{"id":"t2"}]},
		{"id":"t1","role":"tool","content":"r1","parentId":"a2"},
		{"id":"t2","role":"tool","content":"r2","parentId":"a2"},
		{"id":"a3","role":"assistant","content":"follow-up","parentId":"t1"},
		{"id":"u3","role":"user","content":"q3","parentId":"a3"}
	]`)
	p := processors.NewHistoryTruncate(processors.HistoryTruncateConfig{EnableHistoryCount: true, HistoryCount: historyCount(2)})
	out := process(t, p, msgs)
	var ids []string
	for _, m := range out.Messages {
		ids = append(ids, m["id"].(string))
	}
	// The last two groups: u3, and a2 with its tool results and follow-up.
	if got := strings.Join(ids, ","); got != "a2,t1,t2,a3,u3" {
		t.Fatalf("kept %s", got)
	}
	assertJSON(t, out.Metadata, `{"historyTruncated":3,"finalMessageCount":5}`)
}

func TestHistoryTruncateTaskSiblings(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"u1","role":"user","content":"go"},
		{"id":"tool1","role":"tool","content":"dispatch","parentId":"u1"},
		{"id":"task1","role":"task","content":"x","parentId":"tool1"},
		{"id":"task2","role":"task","content":"y","parentId":"tool1"}
	]`)
	p := processors.NewHistoryTruncate(processors.HistoryTruncateConfig{EnableHistoryCount: true, HistoryCount: historyCount(1)})
	out := process(t, p, msgs)
	if len(out.Messages) != 3 || out.Messages[0]["id"] != "tool1" {
		t.Fatalf("kept %v", out.Messages)
	}
}

func TestHistoryTruncateLimits(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"1","role":"user","content":"a"},{"id":"2","role":"assistant","content":"b"}]`)

	out := process(t, processors.NewHistoryTruncate(processors.HistoryTruncateConfig{HistoryCount: historyCount(1)}), msgs)
	if len(out.Messages) != 2 {
		t.Fatal("truncation ran while disabled")
	}
	out = process(t, processors.NewHistoryTruncate(processors.HistoryTruncateConfig{EnableHistoryCount: true}), msgs)
	if len(out.Messages) != 2 {
		t.Fatal("truncation ran without a count")
	}
	for _, n := range []int{0, -3} {
		out = process(t, processors.NewHistoryTruncate(processors.HistoryTruncateConfig{EnableHistoryCount: true, HistoryCount: historyCount(n)}), msgs)
		if len(out.Messages) != 0 || out.Metadata["historyTruncated"] != 2.0 {
			t.Fatalf("count %d kept %v", n, out.Messages)
		}
	}
}

func TestHistoryTruncateConfig(t *testing.T) {
	p := build(t, processors.NameHistoryTruncate, map[string]any{"enableHistoryCount": true, "historyCount": 1.0})
	out := process(t, p, parseMessages(t, `[{"id":"1","role":"user"},{"id":"2","role":"user"}]`))
	if len(out.Messages) != 1 || out.Messages[0]["id"] != "2" {
		t.Fatalf("kept %v", out.Messages)
	}
	err := configError(t, processors.NameHistoryTruncate, map[string]any{"historyCount": "ten"})
	if !errors.Is(err, processors.ErrInvalidConfig) || !strings.Contains(err.Error(), "historyCount: must be an integer") {
		t.Fatalf("err = %v", err)
	}
}
