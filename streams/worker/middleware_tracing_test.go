package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceLinks records spans with the SDK's span natstest.Recorder and requires
// one trace from publisher to worker to processors: the worker's span for
// an event is a child of the client's send span, the snapshot it publishes
// carries the worker's span, and an inference request's span is the parent
// of one span per processor.
func TestTraceLinks(t *testing.T) {
	sr, tp, nc, snaps := tracedServer(t)
	StartWorker(t, nc, WithTracerProvider(tp), WithPipelines(SlimPipelines()))
	c := natstest.NewClient(t, nc, client.WithTracerProvider(tp))
	ctx := context.Background()

	// An event published in a binary-mode message: trace context travels in
	// the ce-traceparent header.
	if _, err := c.Send(ctx, "traced", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}, client.WithMode(streams.Binary)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "traced", streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "content": "yo", "parentId": "m1"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, "traced", 10*time.Second)
	reply, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "traced"})
	if err != nil {
		t.Fatal(err)
	}

	byName := func(prefix string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			if strings.HasPrefix(s.Name(), prefix) {
				out = append(out, s)
			}
		}
		return out
	}
	natstest.WaitFor(t, 5*time.Second, "spans ended", func() bool {
		return len(byName("process ")) == 2 && len(byName("inference")) == 1 && len(byName("processor ")) == 3
	})

	sends, processes := byName("send "), byName("process ")
	if len(sends) != 2 {
		t.Fatalf("%d send spans", len(sends))
	}
	for i, send := range sends {
		p := processes[i]
		if p.Parent().SpanID() != send.SpanContext().SpanID() || p.SpanContext().TraceID() != send.SpanContext().TraceID() {
			t.Errorf("event %d: process span's parent %s, want the send span %s", i, p.Parent().SpanID(), send.SpanContext().SpanID())
		}
		if !p.Parent().IsRemote() || p.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("event %d: parent remote %v, kind %v", i, p.Parent().IsRemote(), p.SpanKind())
		}
	}
	// Each snapshot carries its process span as traceparent.
	natstest.WaitFor(t, 5*time.Second, "snapshots", func() bool { return snaps.Count("") == 2 })
	for i, r := range snaps.All() {
		tp := natstest.ExtString(r.Event, "traceparent")
		want := processes[i].SpanContext()
		if !strings.Contains(tp, want.TraceID().String()) || !strings.Contains(tp, want.SpanID().String()) {
			t.Errorf("snapshot %d traceparent %q, want span %s of trace %s", i, tp, want.SpanID(), want.TraceID())
		}
	}

	var infer, server sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		switch s.Name() {
		case "infer":
			infer = s
		case "inference":
			server = s
		}
	}
	if infer == nil || server == nil || infer.SpanKind() != trace.SpanKindClient || server.SpanKind() != trace.SpanKindServer {
		t.Fatalf("infer %v, inference %v", infer, server)
	}
	if server.Parent().SpanID() != infer.SpanContext().SpanID() || server.SpanContext().TraceID() != infer.SpanContext().TraceID() {
		t.Errorf("inference span's parent %s, want the client's %s", server.Parent().SpanID(), infer.SpanContext().SpanID())
	}
	names := map[string]bool{}
	for _, p := range byName("processor ") {
		names[p.Name()] = true
		if p.Parent().SpanID() != server.SpanContext().SpanID() || p.SpanContext().TraceID() != infer.SpanContext().TraceID() {
			t.Errorf("%s: parent %s, want the inference span %s", p.Name(), p.Parent().SpanID(), server.SpanContext().SpanID())
		}
	}
	if !names["processor slim"] || !names["processor system"] || !names["processor count"] {
		t.Errorf("processor spans: %v", names)
	}
	if tp := natstest.ExtString(reply, "traceparent"); !strings.Contains(tp, server.SpanContext().SpanID().String()) {
		t.Errorf("reply traceparent %q, want the inference span %s", tp, server.SpanContext().SpanID())
	}

	// A failing processor's span records the error.
	if _, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "traced", Pipeline: "failing"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 5*time.Second, "failing spans", func() bool { return len(byName("processor explode")) == 1 })
	explode := byName("processor explode")[0]
	if explode.Status().Code.String() != "Error" || len(explode.Events()) == 0 {
		t.Errorf("explode span: status %v, events %v", explode.Status(), explode.Events())
	}
	t.Logf("trace %s: send → process → snapshot; infer → inference → %d processors", infer.SpanContext().TraceID(), len(names))
}

// TestTraceWithoutTracer runs the worker without a tracer provider (the
// default): it records no span, yet each delta carries the trace context
// of the event that caused it, so the sender's trace goes on.
func TestTraceWithoutTracer(t *testing.T) {
	sr, tp, nc, snaps := tracedServer(t)
	r := StartWorker(t, nc)
	if r.W.traced {
		t.Fatal("the default tracer provider is taken for one that records")
	}
	c := natstest.NewClient(t, nc, client.WithTracerProvider(tp))
	ctx := context.Background()
	if _, err := c.Send(ctx, "untraced", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 5*time.Second, "a snapshot", func() bool { return snaps.Count("") == 1 })
	var send sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if strings.HasPrefix(s.Name(), "send ") {
			send = s
		}
	}
	if send == nil {
		t.Fatal("no send span")
	}
	got := natstest.ExtString(snaps.All()[0].Event, "traceparent")
	if want := send.SpanContext(); !strings.Contains(got, want.TraceID().String()) || !strings.Contains(got, want.SpanID().String()) {
		t.Errorf("snapshot traceparent %q, want span %s of trace %s", got, want.SpanID(), want.TraceID())
	}
}

// tracedServer starts a server and a tracer provider whose ended spans sr
// records, and records the snapshots published on the connection nc.
func tracedServer(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider, *nats.Conn, *natstest.Recorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	return sr, tp, nc, natstest.Record(t, nc, "convstream.snapshots.>")
}
