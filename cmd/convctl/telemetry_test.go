package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestOneTraceFromSenderToProcessors runs convctl send and infer against a
// worker in this process, both tracing to one in-memory exporter: the
// worker's spans must continue convctl's traces (the events and the
// inference request carry traceparent), not start their own.
func TestOneTraceFromSenderToProcessors(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	startWorker(t, worker.WithTracerProvider(tp))
	ctx := withTracerProvider(context.Background(), tp)
	run := func(stdin string, args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := dispatch(ctx, args, strings.NewReader(stdin), &out, &errOut); code != 0 {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out.String(), errOut.String())
		}
	}

	// The snapshot deltas the worker publishes carry the trace on.
	nc, err := nats.Connect(os.Getenv("CONVSTREAM_NATS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subjects, _ := streams.NewSubjects(streams.DefaultPrefix)
	deltas, err := nc.SubscribeSync(subjects.Snapshots("demo"))
	if err != nil {
		t.Fatal(err)
	}
	// The server has the subscription before the first event is sent.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	run(demo, "send", "--all", "--wait", "demo")
	spans := exp.GetSpans()
	root := find(t, spans, "convctl send")
	if root.Parent.IsValid() {
		t.Errorf("convctl send has a parent: %v", root.Parent)
	}
	traceID := root.SpanContext.TraceID()
	sends, processed := 0, 0
	for _, s := range spans {
		switch {
		case strings.HasPrefix(s.Name, "send "):
			sends++
			if s.SpanContext.TraceID() != traceID || s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s is not a child of convctl send", s.Name)
			}
			wantAttrs(t, s, "messaging.operation.name", "publish", "messaging.operation.type", "send")
		case strings.HasPrefix(s.Name, "process "):
			processed++
			if s.SpanContext.TraceID() != traceID {
				t.Errorf("%s is in trace %s, not convctl's %s", s.Name, s.SpanContext.TraceID(), traceID)
			}
			if p := parentName(spans, s); !strings.HasPrefix(p, "send ") {
				t.Errorf("%s has parent %q, want a send span", s.Name, p)
			}
			wantAttrs(t, s, "messaging.operation.name", "process", "messaging.operation.type", "process", "messaging.consumer.group.name", "convstream-worker")
		}
	}
	if sends != 4 || processed != 4 {
		t.Errorf("%d send spans and %d process spans, want 4 and 4", sends, processed)
	}
	for i := 0; i < 4; i++ {
		m, err := deltas.NextMsg(60 * time.Second)
		if err != nil {
			t.Fatalf("delta %d: %v", i+1, err)
		}
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got := trace.SpanContextFromContext(streams.ExtractTraceContext(context.Background(), ev)).TraceID(); got != traceID {
			t.Errorf("snapshot delta %d in trace %s, not convctl's %s", i+1, got, traceID)
		}
	}

	exp.Reset()
	run("", "infer", "demo", "--leaf", "u2")
	spans = exp.GetSpans()
	infer := find(t, spans, "infer")
	wantAttrs(t, infer, "messaging.operation.name", "request", "messaging.operation.type", "send")
	server := find(t, spans, "inference")
	if server.SpanContext.TraceID() != infer.SpanContext.TraceID() || server.Parent.SpanID() != infer.SpanContext.SpanID() {
		t.Errorf("the worker's inference span is not a child of convctl's infer span")
	}
	wantAttrs(t, server, "messaging.operation.type", "process", "messaging.consumer.group.name", "convstream-worker",
		"messaging.destination.name", "convstream.inference.*", "messaging.destination.template", "convstream.inference.{conversation_id}")
	processors := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "processor ") {
			processors++
			if s.SpanContext.TraceID() != infer.SpanContext.TraceID() {
				t.Errorf("%s is not in the infer trace", s.Name)
			}
		}
	}
	if processors == 0 {
		t.Errorf("no processor spans in the infer trace: %v", names(spans))
	}

	// No worker serves the prefix: the client's span says why.
	exp.Reset()
	var out, errOut bytes.Buffer
	if code := dispatch(ctx, []string{"infer", "--subject-prefix", "nobody", "demo"}, nil, &out, &errOut); code != 1 {
		t.Fatalf("infer nobody: %d %s", code, errOut.String())
	}
	wantAttrs(t, find(t, exp.GetSpans(), "infer"), "error.type", "no_responders")

	// A rejected event: error.type names the rejection on the worker's span.
	exp.Reset()
	if code := dispatch(ctx, []string{"send", "--type", "deleted", "--id", "nope", "--wait", "demo"}, nil, &out, &errOut); code != 1 {
		t.Fatalf("rejected send: %d %s", code, errOut.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range exp.GetSpans() {
			if strings.HasPrefix(s.Name, "process ") {
				wantAttrs(t, s, "error.type", "not_found")
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no process span for the rejected event")
}

func find(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %v", name, names(spans))
	return tracetest.SpanStub{}
}

func parentName(spans tracetest.SpanStubs, s tracetest.SpanStub) string {
	for _, p := range spans {
		if p.SpanContext.SpanID() == s.Parent.SpanID() {
			return p.Name
		}
	}
	return ""
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// wantAttrs checks the span's string attributes, given as key, value pairs.
func wantAttrs(t *testing.T, s tracetest.SpanStub, kv ...string) {
	t.Helper()
	got := map[attribute.Key]string{}
	for _, a := range s.Attributes {
		got[a.Key] = a.Value.AsString()
	}
	for i := 0; i < len(kv); i += 2 {
		if got[attribute.Key(kv[i])] != kv[i+1] {
			t.Errorf("%s: %s = %q, want %q", s.Name, kv[i], got[attribute.Key(kv[i])], kv[i+1])
		}
	}
}
