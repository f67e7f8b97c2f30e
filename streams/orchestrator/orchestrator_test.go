package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
)

// setup runs a worker and returns a client on its server.
func setup(t *testing.T, opts ...worker.Option) (*workertest.Running, *client.Client) {
	t.Helper()
	r := workertest.Start(t, opts...)
	c, err := client.New(r.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

// runOrchestrator runs an orchestrator on its own connection to url until
// the returned stop is called (or the test ends).
func runOrchestrator(t *testing.T, url string, opts ...orchestrator.Option) (nc *nats.Conn, stop func()) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("orchestrator: %v", err)
		}
		nc.Close()
	}
	t.Cleanup(stop)
	return nc, stop
}

func builtin(t *testing.T, cfg models.BuiltinConfig) models.Model {
	t.Helper()
	m, err := models.NewBuiltin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ask appends a user message to conv and requests a reply to it.
func ask(t *testing.T, c *client.Client, conv, text string, req streams.ReplyRequest) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": text}); err != nil {
		t.Fatal(err)
	}
	req.ConversationID, req.UserMessageID = conv, "u1"
	if _, err := c.RequestReply(ctx, req); err != nil {
		t.Fatal(err)
	}
}

// message returns the message id of conv's stored snapshot, or nil.
func message(c *client.Client, conv, id string) map[string]any {
	s, err := c.Snapshot(context.Background(), conv)
	if err != nil {
		return nil
	}
	var list []map[string]any
	_ = json.Unmarshal(s.FlatList, &list)
	for _, m := range list {
		if m["id"] == id {
			return m
		}
	}
	return nil
}

// waitEnded waits for message id to end and returns it.
func waitEnded(t *testing.T, c *client.Client, conv, id string) map[string]any {
	t.Helper()
	var m map[string]any
	natstest.WaitFor(t, 60*time.Second, "the reply's end", func() bool {
		m = message(c, conv, id)
		return m != nil && m[streams.FieldStreamStatus] != nil && m[streams.FieldStreamStatus] != streams.StreamStreaming
	})
	return m
}

// TestReply: a user's message and a reply request make the built-in
// model's reply, streamed and completed done, its parent the message.
func TestReply(t *testing.T) {
	r, c := setup(t)
	cfg := models.BuiltinConfig{Tokens: 40, TokensPerChunk: 1, Rate: 0}
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, cfg)))
	ask(t, c, "chat-1", "hello", streams.ReplyRequest{MessageID: "a1"})
	m := waitEnded(t, c, "chat-1", "a1")
	var want strings.Builder
	_, err := builtin(t, cfg).Stream(context.Background(), models.Request{Messages: []map[string]any{{"role": "user", "content": "hello"}}},
		func(d models.Delta) error { want.WriteString(d.Text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if m[streams.FieldStreamStatus] != streams.StreamDone || m["content"] != want.String() || m["parentId"] != "u1" || m["role"] != "assistant" {
		t.Fatalf("reply %v\nwant content %q", m, want.String())
	}
	if m["model"] != "builtin" || m["provider"] != "builtin" {
		t.Errorf("model %v, provider %v", m["model"], m["provider"])
	}
}

// TestReplyToolCall: offered a tool, the model's call is recorded as the
// reply's tools.
func TestReplyToolCall(t *testing.T) {
	r, c := setup(t)
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 5, TokensPerChunk: 1})))
	ask(t, c, "chat-t", "weather in Paris?", streams.ReplyRequest{MessageID: "a1", Tools: []streams.ReplyTool{{Name: "weather____lookup"}}})
	m := waitEnded(t, c, "chat-t", "a1")
	// The flatList shows an assistant that called tools as a group
	// (role assistantGroup) whose child holds the calls.
	var tools []any
	if children, _ := m["children"].([]any); len(children) == 1 {
		tools, _ = children[0].(map[string]any)["tools"].([]any)
	}
	if m[streams.FieldStreamStatus] != streams.StreamDone || len(tools) != 1 {
		t.Fatalf("reply %v", m)
	}
	tool := tools[0].(map[string]any)
	if tool["identifier"] != "weather" || tool["apiName"] != "lookup" || tool["arguments"] != `{"input":"weather in Paris?"}` || tool["id"] == "" {
		t.Errorf("tool %v", tool)
	}
	if md, _ := m["metadata"].(map[string]any); md["finishReason"] != "tool_calls" {
		t.Errorf("metadata %v", m["metadata"])
	}
}

// TestReplyStop: a stop request ends the reply as stopped, with what was
// written.
func TestReplyStop(t *testing.T) {
	r, c := setup(t)
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 10000, TokensPerChunk: 1, Rate: 50})))
	ask(t, c, "chat-s", "hello", streams.ReplyRequest{MessageID: "a1"})
	natstest.WaitFor(t, 60*time.Second, "some text", func() bool {
		m := message(c, "chat-s", "a1")
		s, _ := m["content"].(string)
		return len(s) > 20
	})
	ev, err := c.StopReply(context.Background(), "chat-s", "a1")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type() != streams.TypeReplyStop {
		t.Errorf("answer %s", ev.Type())
	}
	m := waitEnded(t, c, "chat-s", "a1")
	if s, _ := m["content"].(string); m[streams.FieldStreamStatus] != streams.StreamStopped || !strings.HasPrefix(s, `You said "hello". `) {
		t.Fatalf("reply %v", m)
	}
}

// TestReplyOrchestratorKilled: an orchestrator that dies mid-reply (its
// connection gone, nothing completed) leaves its request to another, which
// completes the reply as interrupted; the worker's idle timeout is set
// beyond the test so that the orchestrator is what ends it.
func TestReplyOrchestratorKilled(t *testing.T) {
	r, c := setup(t, worker.WithReplyIdleTimeout(10*time.Minute))
	slow := builtin(t, models.BuiltinConfig{Tokens: 10000, TokensPerChunk: 1, Rate: 50})
	nc, _ := runOrchestrator(t, r.URL, orchestrator.WithModel(slow), orchestrator.WithAckWait(2*time.Second))
	ask(t, c, "chat-k", "hello", streams.ReplyRequest{MessageID: "a1"})
	natstest.WaitFor(t, 60*time.Second, "some text", func() bool {
		s, _ := message(c, "chat-k", "a1")["content"].(string)
		return len(s) > 20
	})
	nc.Close() // as SIGKILL: no completion, no acknowledgement
	runOrchestrator(t, r.URL, orchestrator.WithModel(slow), orchestrator.WithAckWait(2*time.Second))
	m := waitEnded(t, c, "chat-k", "a1")
	if s, _ := m["content"].(string); m[streams.FieldStreamStatus] != streams.StreamInterrupted || !strings.HasPrefix(s, `You said "hello". `) {
		t.Fatalf("reply %v", m)
	}
}

// TestReplyProviderError: a provider's refusal ends the reply as error,
// with LobeHub's error type, the provider's message and code.
func TestReplyProviderError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	r, c := setup(t)
	m := models.NewOpenAI("gpt-test", "sk-wrong", srv.URL, nil)
	runOrchestrator(t, r.URL, orchestrator.WithModel(m))
	ask(t, c, "chat-e", "hello", streams.ReplyRequest{MessageID: "a1"})
	got := waitEnded(t, c, "chat-e", "a1")
	e, _ := got["error"].(map[string]any)
	if got[streams.FieldStreamStatus] != streams.StreamError || e["type"] != "InvalidProviderAPIKey" || e["code"] != "invalid_api_key" ||
		e["message"] != "Incorrect API key provided" {
		t.Fatalf("reply %v", got)
	}
}

// TestReplyRefused: a request that cannot be served is recorded as a
// rejection on its conversation, and no reply is started.
func TestReplyRefused(t *testing.T) {
	r, c := setup(t)
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, models.DefaultBuiltinConfig())))
	ctx := context.Background()
	// A request for another conversation than its subject's, and one for a
	// model this orchestrator does not have.
	msg, err := c.Message(ctx, c.Subjects().Replies("chat-r"), streams.TypeReplyRequested, "chat-r", streams.ReplyRequest{ConversationID: "chat-other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestReply(ctx, streams.ReplyRequest{ConversationID: "chat-r", MessageID: "a1", Model: "openai:gpt-x"}); err != nil {
		t.Fatal(err)
	}
	var codes []streams.RejectCode
	natstest.WaitFor(t, 60*time.Second, "two rejections", func() bool {
		errs, err := c.Errors(ctx, "chat-r")
		if err != nil {
			return false
		}
		codes = codes[:0]
		for _, e := range errs {
			var rej streams.EventRejected
			if e.Event.DataAs(&rej) == nil {
				codes = append(codes, rej.Code)
			}
		}
		return len(codes) == 2
	})
	slices.Sort(codes)
	if !slices.Equal(codes, []streams.RejectCode{streams.CodeBadData, streams.CodeBadConversation}) {
		t.Errorf("codes %v", codes)
	}
	if message(c, "chat-r", "a1") != nil {
		t.Error("a refused request started a reply")
	}
}

// TestReplyConcurrencyBounded: an orchestrator allowed one reply at a time
// writes two requested replies one after the other: its replies in flight
// (the metric) never exceed one. (The stored snapshots cannot tell: the
// first reply's completion may reach its snapshot after the second reply
// started.)
func TestReplyConcurrencyBounded(t *testing.T) {
	r, c := setup(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	runOrchestrator(t, r.URL, orchestrator.WithConcurrency(1), orchestrator.WithMeterProvider(mp),
		orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 30, TokensPerChunk: 1, Rate: 60})))
	ask(t, c, "chat-c1", "one", streams.ReplyRequest{MessageID: "a1"})
	ask(t, c, "chat-c2", "two", streams.ReplyRequest{MessageID: "a1"})
	status := func(conv string) any { return message(c, conv, "a1")[streams.FieldStreamStatus] }
	most := int64(0)
	natstest.WaitFor(t, 60*time.Second, "both replies done", func() bool {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == orchestrator.MetricRepliesInFlight {
					for _, dp := range sum.DataPoints {
						most = max(most, dp.Value)
					}
				}
			}
		}
		return status("chat-c1") == streams.StreamDone && status("chat-c2") == streams.StreamDone
	})
	if most > 1 {
		t.Errorf("%d replies in flight with a concurrency of 1", most)
	}
}

// TestStopEndedReply: a stop of a reply that has ended, or of a message
// that is no reply, is answered at once with streams.ErrNotStreaming: no
// orchestrator writes it, so the request would wait out its deadline.
func TestStopEndedReply(t *testing.T) {
	r, c := setup(t)
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 5, TokensPerChunk: 1, Rate: 0})))
	ask(t, c, "chat-e", "hello", streams.ReplyRequest{MessageID: "a1"})
	waitEnded(t, c, "chat-e", "a1")
	for _, id := range []string{"a1", "u1"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := c.StopReply(ctx, "chat-e", id)
		cancel()
		if !errors.Is(err, streams.ErrNotStreaming) {
			t.Errorf("stop of %s: %v, want ErrNotStreaming", id, err)
		}
	}
}
