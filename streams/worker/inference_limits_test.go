package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
)

// failedReply decodes a pipeline.failed reply, failing the test on any
// other.
func failedReply(t *testing.T, c *client.Client, req streams.InferenceRequest) streams.PipelineFailed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := c.Infer(ctx, req)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	return natstest.InferData[streams.PipelineFailed](t, ev, streams.TypePipelineFailed)
}

// TestInferenceTooLarge: a context larger than the server's max payload
// used to get no reply of any kind (nats.go refused the reply, micro
// reported it as a respond error, the worker dropped it). It is answered,
// and published, as pipeline.failed with code too_large; a context that
// fits is answered as before.
func TestInferenceTooLarge(t *testing.T) {
	const maxPayload = 128 << 10
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(), MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc := natstest.Connect(t, ns)
	results := natstest.Record(t, nc, "convstream.results.>")
	// "bloat" appends a message of params.bloat.bytes bytes.
	bloat := PipelinesFunc(func(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		if name != DefaultPipeline {
			return nil, fmt.Errorf("%w: %q", streams.ErrUnknownPipeline, name)
		}
		n, _ := params["bloat"].(map[string]any)["bytes"].(float64)
		p := enginecore.NewFunc("bloat", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			next := pc.Derive()
			next.Messages = append(append([]enginecore.Message(nil), pc.Messages...), enginecore.Message{"role": "system", "content": strings.Repeat("b", int(n))})
			return next, nil
		})
		return enginecore.New(append([]enginecore.Option{enginecore.WithProcessors(p)}, opts...)...), nil
	})
	StartWorker(t, nc, WithPipelines(bloat), WithLimits(Limits{MaxEventBytes: 64 << 10, MaxMessages: 100}))
	c := natstest.NewClient(t, nc)
	if _, err := c.Send(context.Background(), "big", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, "big", 20*time.Second)

	failed := failedReply(t, c, streams.InferenceRequest{ConversationID: "big", Params: map[string]any{"bloat": map[string]any{"bytes": 200_000.0}}})
	if failed.Code != streams.FailedTooLarge || failed.Processor != "" || failed.ConversationID != "big" || failed.Pipeline != DefaultPipeline ||
		!strings.Contains(failed.Message, fmt.Sprint(maxPayload)) {
		t.Errorf("failed = %+v", failed)
	}
	t.Log(failed.Message)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// raw: the default format carries the context twice (messages and
	// the provider's request), which 100 KB would not fit in.
	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "big", Format: "raw", Params: map[string]any{"bloat": map[string]any{"bytes": 100_000.0}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext); len(got.Messages) != 2 {
		t.Errorf("context: %d messages", len(got.Messages))
	}
	natstest.WaitFor(t, 5*time.Second, "both published", func() bool { return results.Count("convstream.results.big") == 2 })
}

// TestReplySize: replySize counts what the server counts against its max
// payload, to the byte: a reply of exactly the max payload goes out, one
// byte more is refused, with and without the headers of a service error.
func TestReplySize(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	limit := int(nc.MaxPayload())
	for _, errCode := range []string{"", "500"} {
		errText := ""
		if errCode != "" {
			errText = "  Processor [x] failed  " // trimmed on the wire
		}
		msg := nats.NewMsg("reply.size")
		msg.Header.Set("Content-Type", "application/cloudevents+json")
		msg.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		msg.Data = []byte{}
		msg.Data = make([]byte, limit-replySize(msg, errCode, errText))
		if got := replySize(msg, errCode, errText); got != limit {
			t.Fatalf("size %d, want %d", got, limit)
		}
		sent := &nats.Msg{Subject: msg.Subject, Header: nats.Header{}, Data: msg.Data}
		for k, v := range msg.Header {
			sent.Header[k] = v
		}
		if errCode != "" {
			sent.Header.Set(micro.ErrorHeader, errText)
			sent.Header.Set(micro.ErrorCodeHeader, errCode)
		}
		if err := nc.PublishMsg(sent); err != nil {
			t.Errorf("error code %q: a reply of exactly the max payload: %v", errCode, err)
		}
		sent.Data = append(sent.Data, 'x')
		if err := nc.PublishMsg(sent); !errors.Is(err, nats.ErrMaxPayload) {
			t.Errorf("error code %q: one byte over: %v", errCode, err)
		}
	}
}

// TestInferenceTimeoutInsideProcessor: the inference timeout used to be
// checked only between processors, so one long processor answered long
// after it (issue 35: 5.9–9.2 s with a 3 s timeout). A real
// PlaceholderVariablesProcessor whose generator takes 50 ms, over 50
// messages (2.5 s), is stopped at the worker's 300 ms timeout: the reply
// is pipeline.failed, code timeout, naming the processor, and the
// generator ran a few times, not 50.
func TestInferenceTimeoutInsideProcessor(t *testing.T) {
	var calls atomic.Int32
	slow := map[string]processors.VariableFunc{"slow": func() (string, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		return "done", nil
	}}
	registry := processors.Default(processors.WithVariables(slow))
	pipelines := PipelinesFunc(func(_ context.Context, name string, _ map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		return registry.Build(&processors.Spec{Name: name, Processors: []processors.ProcessorSpec{{Name: processors.NamePlaceholderVariables}}}, opts...)
	})
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc, WithPipelines(pipelines), WithInferenceTimeout(300*time.Millisecond))
	c := natstest.NewClient(t, nc)
	parent := any(nil)
	for i := range 50 {
		id := fmt.Sprintf("m%d", i)
		if _, err := c.Send(context.Background(), "slow", streams.TypeMessageAppended, map[string]any{"id": id, "role": "user", "content": "{{slow}}", "parentId": parent}); err != nil {
			t.Fatal(err)
		}
		parent = id
	}
	natstest.WaitCaughtUp(t, c, "slow", 20*time.Second)

	start := time.Now()
	failed := failedReply(t, c, streams.InferenceRequest{ConversationID: "slow"})
	elapsed := time.Since(start)
	if failed.Code != streams.FailedTimeout || failed.Processor != processors.NamePlaceholderVariables || !strings.Contains(failed.Cause, context.DeadlineExceeded.Error()) {
		t.Errorf("failed = %+v", failed)
	}
	if n := calls.Load(); n >= 25 {
		t.Errorf("the generator ran %d times of 50", n)
	}
	t.Logf("answered in %v after %d generator calls: %s", elapsed, calls.Load(), failed.Message)
}

// TestFailureCodes: how a pipeline's error is classified.
func TestFailureCodes(t *testing.T) {
	for err, want := range map[error]streams.FailureCode{
		&enginecore.PipelineError{Processor: "p", Cause: errors.New("quota")}:                                 streams.FailedProcessor,
		&enginecore.PipelineError{Processor: "p", Cause: fmt.Errorf("x: %w", enginecore.ErrProcessorPanic)}:   streams.FailedInternal,
		&enginecore.PipelineError{Processor: "p", Cause: fmt.Errorf("stopped: %w", context.DeadlineExceeded)}: streams.FailedTimeout,
		fmt.Errorf("enginecore: pipeline stopped before processor p: %w", context.DeadlineExceeded):           streams.FailedTimeout,
		fmt.Errorf("enginecore: pipeline stopped before processor p: %w", context.Canceled):                   streams.FailedCanceled,
		&enginecore.PipelineError{Processor: "p", Cause: &enginecore.LimitError{Limit: "maxExpansionBytes"}}:  streams.FailedLimit,
		&enginecore.PipelineError{Processor: "p", Cause: fmt.Errorf("nothing: %w", enginecore.ErrNilContext)}: streams.FailedInternal,
	} {
		failed := pipelineFailure("r", "c", "default", err)
		if failed.Code != want {
			t.Errorf("%v: %s, want %s", err, failed.Code, want)
		}
		b, _ := json.Marshal(failed)
		natstest.CheckData(t, streams.TypePipelineFailed, json.RawMessage(b))
	}
}
