package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestInferenceFormatOptions asks for an Anthropic request with cache
// breakpoints and a budget, then for formats and budgets the contract
// refuses.
func TestInferenceFormatOptions(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	worker.StartWorker(t, nc, worker.WithPipelines(worker.SlimPipelines()))
	c := natstest.NewClient(t, nc)
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
	natstest.WaitCaughtUp(t, c, "fmt", 20*time.Second)

	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "fmt", Format: "anthropic.messages",
		Cache:  &providers.CacheBreakpoints{LastUserTurns: 1, TTL: "1h"},
		Budget: &streams.TokenBudget{MaxTokens: 30, Reserve: 10, KeepTurns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
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
		{"profile not an object", map[string]any{"profile": "claude"}, "data.profile"},
		{"unknown prefill", map[string]any{"profile": map[string]any{"prefill": "sometimes"}}, "data.profile.prefill"},
		{"model not a string", map[string]any{"profile": map[string]any{"model": 4.6}}, "data.profile.model"},
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
	return natstest.InferData[streams.EventRejected](t, ev, streams.TypeEventRejected)
}

// TestInferenceProfileAndWarnings asks for a context that ends with the
// assistant's words: for claude-sonnet-4-5 the prefill stays, for
// claude-opus-4-6 (and a model the worker does not know) the request ends
// with the user's turn (Claude from 4.6 refuses a prefill). Then for a
// conversation whose tool calls the test pipeline leaves in a group
// message: the reply warns that the group reached the format unflattened,
// and convstream.inference.warnings counts it.
func TestInferenceProfileAndWarnings(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	worker.StartWorker(t, nc, worker.WithPipelines(worker.SlimPipelines()), worker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	send := func(conv string, msgs ...map[string]any) {
		for i, m := range msgs {
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, m); err != nil {
				t.Fatal(i, err)
			}
		}
		natstest.WaitCaughtUp(t, c, conv, 20*time.Second)
	}
	send("prefill", map[string]any{"id": "u1", "role": "user", "content": "hi"},
		map[string]any{"id": "a1", "role": "assistant", "content": "hello", "parentId": "u1"})
	for _, tc := range []struct {
		profile *providers.Profile
		last    string
	}{
		{&providers.Profile{Model: "claude-sonnet-4-5"}, "assistant"},
		{&providers.Profile{Model: "claude-opus-4-6"}, "user"},
		{nil, "user"},
	} {
		ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "prefill", Format: "anthropic.messages", Profile: tc.profile})
		if err != nil {
			t.Fatal(err)
		}
		got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		msgs, _ := got.Request["messages"].([]any)
		if len(msgs) == 0 {
			t.Fatalf("%+v: request %v", tc.profile, got.Request)
		}
		if role := msgs[len(msgs)-1].(map[string]any)["role"]; role != tc.last {
			t.Errorf("%+v: the request ends with the %v's turn, want the %s's", tc.profile, role, tc.last)
		}
		if len(got.Warnings) != 0 {
			t.Errorf("%+v: warnings %q", tc.profile, got.Warnings)
		}
	}

	send("group", map[string]any{"id": "u1", "role": "user", "content": "add them"},
		map[string]any{"id": "a1", "role": "assistant", "content": "", "parentId": "u1",
			"tools": []any{map[string]any{"id": "c1", "identifier": "calc", "apiName": "add", "arguments": "{}", "type": "default"}}},
		map[string]any{"id": "t1", "role": "tool", "content": "3", "parentId": "a1", "tool_call_id": "c1",
			"plugin": map[string]any{"identifier": "calc", "apiName": "add", "type": "default"}})
	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "group", Format: "gemini"})
	if err != nil {
		t.Fatal(err)
	}
	got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "assistantGroup") {
		t.Errorf("warnings %q", got.Warnings)
	}
	if n := natstest.Sums(t, reader)[worker.MetricInferenceWarnings]; n != 1 {
		t.Errorf("%s = %d, want 1", worker.MetricInferenceWarnings, n)
	}
}
