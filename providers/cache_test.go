package providers_test

import (
	"encoding/json"
	"testing"

	"github.com/convstream/convstream/providers"
)

// TestCachePrefixStable builds the Anthropic request of a growing
// conversation (conversation-1716's pipeline output, cut after each user
// turn, where an inference request is made) with breakpoints on the system prompt and the last two user
// turns, and requires each request to share with the next, byte for byte,
// everything up to its own last breakpoint: the prefix the API's cache
// matches. The markers themselves move with the conversation (the
// documented way to cache a conversation incrementally), so they are left
// out of the comparison; the tools are the orchestrator's, as in a real
// request.
func TestCachePrefixStable(t *testing.T) {
	msgs := bench1716(t)
	opt := providers.WithCacheBreakpoints(providers.CacheBreakpoints{System: true, LastUserTurns: 2})
	// An orchestrator declares its own tools, the same in every request;
	// the tools Build declares are those the history has called so far,
	// which grow (and would change the prefix) as new ones are called.
	whole, err := providers.Build(msgs, providers.FormatAnthropic)
	if err != nil {
		t.Fatal(err)
	}
	tools := whole.Body["tools"]
	var prev map[string]any
	var prevLast []int
	compared := 0
	for n := 1; n <= len(msgs); n++ {
		if msgs[n-1]["role"] != "user" || n < len(msgs) && msgs[n]["role"] == "user" {
			continue // cut where a user has just asked, as an inference request is
		}
		r, err := providers.Build(msgs[:n], providers.FormatAnthropic, opt)
		if err != nil {
			t.Fatal(err)
		}
		r.Body["tools"] = tools
		body := canonical(t, r.Body)
		last := lastBreakpoint(body)
		if last == nil {
			t.Fatalf("cut %d: no breakpoint in the messages", n)
		}
		if prev != nil {
			mi, bi := prevLast[0], prevLast[1]
			want, got := prefix(prev, mi, bi), prefix(body, mi, bi)
			if want != got {
				t.Fatalf("cut %d: the prefix up to the last breakpoint changed:\nbefore %s\nafter  %s", n, want, got)
			}
			compared++
		}
		prev, prevLast = body, last
	}
	if compared < 3 {
		t.Fatalf("only %d pairs compared", compared)
	}
	t.Logf("%d consecutive requests share their prefix up to the last breakpoint", compared)
}

// canonical returns body as JSON decodes it.
func canonical(t *testing.T, body map[string]any) map[string]any {
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// lastBreakpoint returns the message and block index of the last
// cache_control among the messages.
func lastBreakpoint(body map[string]any) []int {
	var last []int
	for i, m := range body["messages"].([]any) {
		for j, b := range m.(map[string]any)["content"].([]any) {
			if _, ok := b.(map[string]any)["cache_control"]; ok {
				last = []int{i, j}
			}
		}
	}
	return last
}

// prefix returns the JSON of what the cache matches up to block bi of
// message mi: the tools, the system, and the messages to there, without
// the markers.
func prefix(body map[string]any, mi, bi int) string {
	strip := func(v any) any {
		b, _ := json.Marshal(v)
		var c any
		_ = json.Unmarshal(b, &c)
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				delete(x, "cache_control")
				for _, v := range x {
					walk(v)
				}
			case []any:
				for _, v := range x {
					walk(v)
				}
			}
		}
		walk(c)
		return c
	}
	msgs := body["messages"].([]any)
	var upTo []any
	for i := 0; i < mi && i < len(msgs); i++ {
		upTo = append(upTo, msgs[i])
	}
	if mi < len(msgs) {
		m := msgs[mi].(map[string]any)
		blocks := m["content"].([]any)
		upTo = append(upTo, map[string]any{"role": m["role"], "content": blocks[:min(bi+1, len(blocks))]})
	}
	b, _ := json.Marshal(strip(map[string]any{"tools": body["tools"], "system": body["system"], "messages": upTo}))
	return string(b)
}
