package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// errQuota is what the failing pipeline's processor returns.
var errQuota = errors.New("model quota exceeded")

// testPipelines builds real engines of real processors (enginecore.NewFunc):
// "default" keeps role and content, prepends a system message taken from
// params, and counts; "failing" fails in its second processor.
func testPipelines() Pipelines {
	slim := enginecore.NewFunc("slim", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Messages = make([]enginecore.Message, 0, len(pc.Messages))
		for _, m := range pc.Messages {
			next.Messages = append(next.Messages, enginecore.Message{"id": m["id"], "role": m["role"], "content": m["content"]})
		}
		return next, nil
	})
	count := enginecore.NewFunc("count", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Metadata["count"] = float64(len(pc.Messages))
		return next, nil
	})
	system := func(params map[string]any) enginecore.Processor {
		text := "You are helpful."
		if cfg, ok := params["system"].(map[string]any); ok {
			if s, ok := cfg["content"].(string); ok {
				text = s
			}
		}
		return enginecore.NewFunc("system", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			next := pc.Derive()
			next.Messages = append([]enginecore.Message{{"role": "system", "content": text}}, pc.Messages...)
			next.Metadata["systemInjected"] = true
			return next, nil
		})
	}
	explode := enginecore.NewFunc("explode", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		return nil, errQuota
	})
	return PipelinesFunc(func(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		var procs []enginecore.Processor
		switch name {
		case DefaultPipeline:
			procs = []enginecore.Processor{slim, system(params), count}
		case "failing":
			procs = []enginecore.Processor{slim, explode, count}
		default:
			return nil, fmt.Errorf("%w: %q", streams.ErrUnknownPipeline, name)
		}
		return enginecore.New(append([]enginecore.Option{enginecore.WithProcessors(procs...)}, opts...)...), nil
	})
}

// expectedContext runs the default test pipeline locally on the flat list
// of msgs.
func expectedContext(t testing.TB, msgs []*conversation.Message, groups []*conversation.MessageGroup, params map[string]any) *enginecore.PipelineResult {
	t.Helper()
	res, err := conversation.Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]enginecore.Message, len(res.FlatList))
	for i, m := range res.FlatList {
		in[i] = m.Fields()
	}
	eng, err := testPipelines().Pipeline(context.Background(), DefaultPipeline, params)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func inferData[T any](t testing.TB, ev *event.Event, typ string) T {
	t.Helper()
	var v T
	if ev.Type() != typ {
		t.Fatalf("reply type %s, want %s: %s", ev.Type(), typ, ev.Data())
	}
	checkEvent(t, ev)
	if err := json.Unmarshal(ev.Data(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInference requests contexts over NATS request-reply and requires the
// pipeline's output on the active path and on the path to a leaf, a
// pipeline.failed for a failing processor, a rejection for what cannot be
// served, and every reply also published on the results (or errors)
// subject.
func TestInference(t *testing.T) {
	cases := loadCorpus(t, "generated-normal.jsonl.gz", 3)
	ns := startServer(t, "")
	nc := connect(t, ns)
	results := record(t, nc, "convstream.results.>")
	errs := record(t, nc, "convstream.errors.>")
	startWorker(t, nc, WithPipelines(testPipelines()), WithLanes(2))
	c := newClient(t, nc)
	ctx := context.Background()

	for i, cc := range cases {
		conv := caseID(i)
		sendConversation(t, c, conv, i, cc)
		stored := waitCaughtUp(t, c, conv, 20*time.Second)

		// The active path.
		// raw: the pipeline's output as it is, compared with the pipeline
		// run here.
		ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: conv, Format: "raw"}, client.WithEventID(conv+"-active"))
		if err != nil {
			t.Fatal(err)
		}
		got := inferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		want := expectedContext(t, cc.msgs, cc.groups, nil)
		if d := jsondiff.Diff(decoded(t, want.Messages), decoded(t, got.Messages)); d != "" {
			t.Errorf("%s: messages differ: %s", conv, d)
		}
		if d := jsondiff.Diff(decoded(t, want.Metadata), decoded(t, got.Metadata)); d != "" {
			t.Errorf("%s: metadata differs: %s", conv, d)
		}
		if got.RequestID != conv+"-active" || got.ConversationID != conv || got.Version != stored.Version ||
			got.Stats.ProcessedCount != 3 || got.IsAborted || got.Pipeline != DefaultPipeline || got.Format != "raw" || got.Request != nil {
			t.Errorf("%s: context = %+v", conv, got)
		}
		t.Logf("%s (%s): %d messages → %d in the context, %v", conv, cc.Name, len(cc.msgs), len(got.Messages), got.Stats.TotalDuration)

		// The path to a leaf in the middle, with params, in binary mode, in
		// the default format: the pipeline's output as providers write it.
		leaf := cc.msgs[len(cc.msgs)/2].ID()
		live := conversation.NewConversation()
		for _, m := range cc.msgs {
			_ = live.Append(m)
		}
		path, err := live.PathTo(leaf)
		if err != nil {
			t.Fatal(err)
		}
		params := map[string]any{"system": map[string]any{"content": "Be brief."}}
		ev, err = c.Infer(ctx, streams.InferenceRequest{ConversationID: conv, LeafID: leaf, Params: params}, client.WithMode(streams.Binary))
		if err != nil {
			t.Fatal(err)
		}
		got = inferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		want = expectedContext(t, path, cc.groups, params)
		built, err := providers.Build(want.Messages, providers.FormatOpenAIChat)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(decoded(t, built.Messages), decoded(t, got.Messages)); d != "" {
			t.Errorf("%s leaf %s: messages differ: %s", conv, leaf, d)
		}
		if d := jsondiff.Diff(decoded(t, built.Body), decoded(t, got.Request)); d != "" {
			t.Errorf("%s leaf %s: request differs: %s", conv, leaf, d)
		}
		if got.LeafID != leaf || got.Messages[0]["content"] != "Be brief." || got.Format != "openai.chat" {
			t.Errorf("%s leaf %s: context = %+v", conv, leaf, got)
		}
	}

	// A failing processor.
	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: caseID(0), Pipeline: "failing"}, client.WithEventID("fail-1"))
	if err != nil {
		t.Fatal(err)
	}
	failed := inferData[streams.PipelineFailed](t, ev, streams.TypePipelineFailed)
	if failed.Processor != "explode" || failed.Cause != errQuota.Error() || failed.RequestID != "fail-1" ||
		failed.Message != "Processor [explode] execution failed: model quota exceeded" || failed.ConversationID != caseID(0) {
		t.Errorf("failed = %+v", failed)
	}

	// Requests that cannot be served.
	for _, tc := range []struct {
		name string
		req  streams.InferenceRequest
		code string
	}{
		{"unknown pipeline", streams.InferenceRequest{ConversationID: caseID(0), Pipeline: "nope"}, streams.CodeUnknownPipeline},
		{"unknown leaf", streams.InferenceRequest{ConversationID: caseID(0), LeafID: "no-such-message"}, streams.CodeNotFound},
		{"unknown conversation", streams.InferenceRequest{ConversationID: "never-seen"}, streams.CodeNotFound},
	} {
		start := time.Now()
		ev, err := c.Infer(ctx, tc.req)
		if err != nil {
			t.Fatal(err)
		}
		rej := inferData[streams.EventRejected](t, ev, streams.TypeEventRejected)
		if rej.Code != tc.code || rej.EventID == nil || rej.Reason == "" {
			t.Errorf("%s: rejection %+v", tc.name, rej)
		}
		t.Logf("%s → %s (%s) in %v", tc.name, rej.Code, rej.Reason, time.Since(start))
	}
	// A request whose data names another conversation.
	msg := func() *event.Event {
		e, err := streams.NewEvent("mismatch-1", streams.TypeInferenceRequested, "urn:test", "", map[string]any{"conversationId": "other"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}()
	m, err := streams.EncodeEvent("convstream.inference."+caseID(0), msg, streams.Structured)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := nc.RequestMsg(m, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), streams.CodeBadConversation) || reply.Header.Get("Nats-Service-Error-Code") != "400" {
		t.Errorf("mismatch reply: %v %s", reply.Header, reply.Data)
	}

	// Read your writes: a message appended just before the request is in
	// its context.
	if _, err := c.Send(ctx, caseID(1), streams.TypeMessageAppended, map[string]any{
		"id": "fresh", "role": "user", "content": "just now", "parentId": cases[1].msgs[len(cases[1].msgs)-1].ID()}); err != nil {
		t.Fatal(err)
	}
	ev, err = c.Infer(ctx, streams.InferenceRequest{ConversationID: caseID(1), LeafID: "fresh", Format: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	fresh := inferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
	if last := fresh.Messages[len(fresh.Messages)-1]; last["id"] != "fresh" {
		t.Errorf("read-your-writes: last message %v", last)
	}

	waitFor(t, 5*time.Second, "results published", func() bool { return results.count("") >= 2*len(cases)+2 })
	for _, r := range results.all() {
		if r.err != nil || !strings.HasPrefix(r.subject, "convstream.results.") {
			t.Errorf("result %s: %v", r.subject, r.err)
			continue
		}
		checkEvent(t, r.ev)
		conv := extString(r.ev, streams.ExtConversationID)
		if r.subject != "convstream.results."+conv {
			t.Errorf("result for %s on %s", conv, r.subject)
		}
	}
	waitFor(t, 5*time.Second, "rejections published", func() bool { return errs.count("") >= 4 })
}
