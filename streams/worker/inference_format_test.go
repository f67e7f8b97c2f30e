package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestInferenceFormatOptions asks for an Anthropic request with cache
// breakpoints and a budget, then for formats and budgets the contract
// refuses.
func TestInferenceFormatOptions(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	startWorker(t, nc, WithPipelines(testPipelines()))
	c := newClient(t, nc)
	ctx := context.Background()
	for i, m := range []map[string]any{
		{"id": "u1", "role": "user", "content": "first question with several words in it"},
		{"id": "a1", "role": "assistant", "content": "a first answer", "parentId": "u1"},
		{"id": "u2", "role": "user", "content": "second", "parentId": "a1"},
	} {
		if _, err := c.Send(ctx, "fmt", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(i, err)
		}
	}
	waitCaughtUp(t, c, "fmt", 20*time.Second)

	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "fmt", Format: "anthropic.messages",
		Cache:  &providers.CacheBreakpoints{LastUserTurns: 1, TTL: "1h"},
		Budget: &streams.TokenBudget{MaxTokens: 30, Reserve: 10, KeepTurns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := inferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
	b, _ := json.Marshal(got.Request)
	want := `{"max_tokens":10,"messages":[{"content":[{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"second","type":"text"}],"role":"user"}],"system":[{"text":"You are helpful.","type":"text"}]}`
	if got.Format != "anthropic.messages" || string(b) != want || got.Usage == nil || got.Usage.DroppedMessages != 2 {
		t.Errorf("format %q usage %+v request\n%s\nwant\n%s", got.Format, got.Usage, b, want)
	}

	for _, tc := range []struct {
		name string
		data map[string]any
		path string
	}{
		{"unknown format", map[string]any{"format": "openai"}, "data.format"},
		{"budget with raw", map[string]any{"format": "raw", "budget": map[string]any{"maxTokens": 10.0}}, "data.budget"},
		{"reserve past the window", map[string]any{"budget": map[string]any{"maxTokens": 10.0, "reserve": 10.0}}, "data.budget.reserve"},
		{"unknown encoding", map[string]any{"budget": map[string]any{"maxTokens": 10.0, "encoding": "gpt2"}}, "data.budget.encoding"},
		{"bad ttl", map[string]any{"cache": map[string]any{"ttl": "2h"}}, "data.cache.ttl"},
		{"window not an integer", map[string]any{"budget": map[string]any{"maxTokens": 10.5}}, "data.budget.maxTokens: must be an integer"},
		{"window too large", map[string]any{"budget": map[string]any{"maxTokens": 99999999999.0}}, "data.budget.maxTokens: 99999999999 is too large: at most 2147483648"},
		{"turns too large", map[string]any{"cache": map[string]any{"lastUserTurns": 1e300}}, "data.cache.lastUserTurns: 1" /* the number in full */},
	} {
		data := map[string]any{"conversationId": "fmt"}
		for k, v := range tc.data {
			data[k] = v
		}
		rej := inferRaw(t, c, "fmt", data)
		if rej.Code != streams.CodeBadData || !strings.HasPrefix(rej.Reason, tc.path) {
			t.Errorf("%s: %+v, want bad_data at %s", tc.name, rej, tc.path)
		}
	}
}

// inferRaw sends an inference request with data as given and returns the
// rejection it gets.
func inferRaw(t *testing.T, c *client.Client, conv string, data map[string]any) streams.EventRejected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg, err := c.Message(ctx, c.Subjects().Inference(conv), streams.TypeInferenceRequested, conv, data)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Conn().RequestMsgWithContext(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := streams.DecodeEvent(reply.Header, reply.Data)
	if err != nil {
		t.Fatal(err)
	}
	return inferData[streams.EventRejected](t, ev, streams.TypeEventRejected)
}
