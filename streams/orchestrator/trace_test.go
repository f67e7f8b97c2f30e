package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
)

// TestReplyTrace: one trace from the user's message to the reply's last
// chunk: the client's sends, the worker's processing of the message, the
// placeholder, the chunks and the completion, the inference request and
// its pipeline, the orchestrator's reply and its model call.
func TestReplyTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	r, _ := setup(t, worker.WithTracerProvider(tp))
	c, err := client.New(r.Conn, client.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	runOrchestrator(t, r.URL, orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 5, TokensPerChunk: 1})),
		orchestrator.WithTracerProvider(tp))
	ctx, root := tp.Tracer("test").Start(context.Background(), "user turn")
	if _, err := c.Send(ctx, "chat-tr", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestReply(ctx, streams.ReplyRequest{ConversationID: "chat-tr", UserMessageID: "u1", MessageID: "a1"}); err != nil {
		t.Fatal(err)
	}
	root.End()
	waitEnded(t, c, "chat-tr", "a1")
	want := map[string]bool{"reply chat-tr": false, "chat builtin": false, "inference": false,
		"process " + streams.TypeMessageChunk: false, "process " + streams.TypeMessageCompleted: false}
	var names []string
	natstest.WaitFor(t, 30*time.Second, "the spans of the reply in the user's trace", func() bool {
		names = names[:0]
		for k := range want {
			want[k] = false
		}
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
				continue
			}
			names = append(names, s.Name())
			for k := range want {
				if strings.HasPrefix(s.Name(), k) {
					want[k] = true
				}
			}
		}
		for _, ok := range want {
			if !ok {
				return false
			}
		}
		return true
	})
	t.Logf("%d spans in the trace", len(names))
}
