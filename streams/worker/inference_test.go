package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// errQuota is what the failing pipeline's processor returns.
var errQuota = errors.New("model quota exceeded")

// TestInference requests contexts over NATS request-reply and requires the
// pipeline's output on the active path and on the path to a leaf, a
// pipeline.failed for a failing processor, a rejection for what cannot be
// served, and every reply also published on the results (or errors)
// subject.
func TestInference(t *testing.T) {
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 3)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	results := natstest.Record(t, nc, "convstream.results.>")
	errs := natstest.Record(t, nc, "convstream.errors.>")
	StartWorker(t, nc, WithPipelines(SlimPipelines()), WithLanes(2))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	for i, cc := range cases {
		conv := natstest.CaseID(i)
		sendConversation(t, c, conv, i, cc)
		stored := natstest.WaitCaughtUp(t, c, conv, 20*time.Second)

		// The active path.
		// raw: the pipeline's output as it is, compared with the pipeline
		// run here.
		ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: conv, Format: "raw"}, client.WithEventID(conv+"-active"))
		if err != nil {
			t.Fatal(err)
		}
		got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		want := ExpectedContext(t, cc.Msgs, cc.Groups, nil)
		if d := jsondiff.Diff(natstest.Decoded(t, want.Messages), natstest.Decoded(t, got.Messages)); d != "" {
			t.Errorf("%s: messages differ: %s", conv, d)
		}
		if d := jsondiff.Diff(natstest.Decoded(t, want.Metadata), natstest.Decoded(t, got.Metadata)); d != "" {
			t.Errorf("%s: metadata differs: %s", conv, d)
		}
		if got.RequestID != conv+"-active" || got.ConversationID != conv || got.Version != stored.Version ||
			got.Stats.ProcessedCount != 3 || got.IsAborted || got.Pipeline != DefaultPipeline || got.Format != "raw" || got.Request != nil {
			t.Errorf("%s: context = %+v", conv, got)
		}
		t.Logf("%s (%s): %d messages → %d in the context, %v", conv, cc.Name, len(cc.Msgs), len(got.Messages), got.Stats.TotalDuration)

		// The path to a leaf in the middle, with params, in binary mode, in
		// the default format: the pipeline's output as providers write it.
		leaf := cc.Msgs[len(cc.Msgs)/2].ID()
		live := conversation.NewConversation()
		for _, m := range cc.Msgs {
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
		got = natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		want = ExpectedContext(t, path, cc.Groups, params)
		built, err := providers.Build(want.Messages, providers.FormatOpenAIChat)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(natstest.Decoded(t, built.Messages), natstest.Decoded(t, got.Messages)); d != "" {
			t.Errorf("%s leaf %s: messages differ: %s", conv, leaf, d)
		}
		if d := jsondiff.Diff(natstest.Decoded(t, built.Body), natstest.Decoded(t, got.Request)); d != "" {
			t.Errorf("%s leaf %s: request differs: %s", conv, leaf, d)
		}
		if got.LeafID != leaf || got.Messages[0]["content"] != "Be brief." || got.Format != "openai.chat" {
			t.Errorf("%s leaf %s: context = %+v", conv, leaf, got)
		}
	}

	// A failing processor.
	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: natstest.CaseID(0), Pipeline: "failing"}, client.WithEventID("fail-1"))
	if err != nil {
		t.Fatal(err)
	}
	failed := natstest.InferData[streams.PipelineFailed](t, ev, streams.TypePipelineFailed)
	if failed.Processor != "explode" || failed.Cause != errQuota.Error() || failed.RequestID != "fail-1" ||
		failed.Message != "Processor [explode] execution failed: model quota exceeded" || failed.ConversationID != natstest.CaseID(0) {
		t.Errorf("failed = %+v", failed)
	}

	// Requests that cannot be served.
	for _, tc := range []struct {
		name string
		req  streams.InferenceRequest
		code streams.RejectCode
	}{
		{"unknown pipeline", streams.InferenceRequest{ConversationID: natstest.CaseID(0), Pipeline: "nope"}, streams.CodeUnknownPipeline},
		{"unknown leaf", streams.InferenceRequest{ConversationID: natstest.CaseID(0), LeafID: "no-such-message"}, streams.CodeNotFound},
		{"unknown conversation", streams.InferenceRequest{ConversationID: "never-seen"}, streams.CodeNotFound},
	} {
		start := time.Now()
		ev, err := c.Infer(ctx, tc.req)
		if err != nil {
			t.Fatal(err)
		}
		rej := natstest.InferData[streams.EventRejected](t, ev, streams.TypeEventRejected)
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
	m, err := streams.EncodeEvent("convstream.inference."+natstest.CaseID(0), msg, streams.Structured)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := nc.RequestMsg(m, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), string(streams.CodeBadConversation)) || reply.Header.Get("Nats-Service-Error-Code") != "400" {
		t.Errorf("mismatch reply: %v %s", reply.Header, reply.Data)
	}

	// Read your writes: a message appended just before the request is in
	// its context.
	if _, err := c.Send(ctx, natstest.CaseID(1), streams.TypeMessageAppended, map[string]any{
		"id": "fresh", "role": "user", "content": "just now", "parentId": cases[1].Msgs[len(cases[1].Msgs)-1].ID()}); err != nil {
		t.Fatal(err)
	}
	ev, err = c.Infer(ctx, streams.InferenceRequest{ConversationID: natstest.CaseID(1), LeafID: "fresh", Format: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	fresh := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
	if last := fresh.Messages[len(fresh.Messages)-1]; last["id"] != "fresh" {
		t.Errorf("read-your-writes: last message %v", last)
	}

	natstest.WaitFor(t, 5*time.Second, "results published", func() bool { return results.Count("") >= 2*len(cases)+2 })
	for _, r := range results.All() {
		if r.Err != nil || !strings.HasPrefix(r.Subject, "convstream.results.") {
			t.Errorf("result %s: %v", r.Subject, r.Err)
			continue
		}
		natstest.CheckEvent(t, r.Event)
		conv := natstest.ExtString(r.Event, streams.ExtConversationID)
		if r.Subject != "convstream.results."+conv {
			t.Errorf("result for %s on %s", conv, r.Subject)
		}
	}
	natstest.WaitFor(t, 5*time.Second, "rejections published", func() bool { return errs.Count("") >= 4 })
}
