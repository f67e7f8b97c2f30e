package providers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
)

// TestWorkerAnswersInEveryFormat sends every conversation of the shared
// conformance corpus through a worker (embedded JetStream, the default
// pipeline) and asks for its context in each format: every request the
// worker writes is accepted by the official SDKs' checks and the fake
// provider, as in TestProviderSDKsAcceptEveryRequest.
func TestWorkerAnswersInEveryFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("sends the whole conformance corpus through a worker")
	}
	type conformanceCase struct {
		Name  string `json:"name"`
		Input struct {
			Messages      []map[string]any `json:"messages"`
			MessageGroups []map[string]any `json:"messageGroups"`
		} `json:"input"`
	}
	var cases []conformanceCase
	for _, f := range []string{"reference-suite", "generated-normal", "generated-noise"} {
		cs, err := testcorpus.Decode[conformanceCase]("../conversation/testdata/conformance/" + f + ".jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}

	ns, err := streams.StartEmbedded(streams.EmbeddedConfig{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	pipelines := streams.PipelinesFunc(func(_ context.Context, name string, _ map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		if name != streams.DefaultPipeline {
			return nil, streams.ErrUnknownPipeline
		}
		return processors.Default().Build(processors.DefaultSpec(), opts...)
	})
	w, err := streams.NewWorker(nc, streams.WithPipelines(pipelines), streams.WithInferenceWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(30 * time.Second); w.Ready() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("worker not ready: %v", w.Ready())
		}
	}
	c, err := streams.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	events := 0
	for i, cc := range cases {
		conv := fmt.Sprintf("c%03d", i)
		for _, g := range cc.Input.MessageGroups {
			if _, err := c.Send(ctx, conv, streams.TypeGroupsUpserted, g); err != nil {
				t.Fatal(err)
			}
			events++
		}
		for _, m := range cc.Input.Messages {
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, m); err != nil {
				t.Fatal(err)
			}
			events++
		}
	}
	t.Logf("%d conversations, %d events sent in %v", len(cases), events, time.Since(start))

	send := sdkChecks(t, fakeProvider(t))
	accepted, total := 0, 0
	for i, cc := range cases {
		conv := fmt.Sprintf("c%03d", i)
		for _, f := range []providers.Format{providers.FormatOpenAIChat, providers.FormatOpenAIResponses, providers.FormatAnthropic, providers.FormatGemini} {
			total++
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			ev, err := c.Infer(rctx, streams.InferenceRequest{ConversationID: conv, Format: string(f)})
			rcancel()
			if err != nil {
				t.Fatalf("%s %s: %v", conv, f, err)
			}
			if ev.Type() != streams.TypeInferenceContext {
				// A conversation the corpus builds to be refused (noise) has
				// no context to check.
				t.Logf("%s (%s) %s: %s %s", conv, cc.Name, f, ev.Type(), ev.Data())
				continue
			}
			var out streams.InferenceContext
			if err := json.Unmarshal(ev.Data(), &out); err != nil {
				t.Fatal(err)
			}
			if out.Format != string(f) {
				t.Errorf("%s: format %q, want %q", conv, out.Format, f)
			}
			if err := send[f](withModel(t, out.Request)); err != nil {
				t.Errorf("%s (%s) %s: %v", conv, cc.Name, f, err)
				continue
			}
			accepted++
		}
	}
	t.Logf("worker's requests: %d/%d accepted (%d conversations, 4 formats) in %v", accepted, total, len(cases), time.Since(start))
	if accepted != total {
		t.Errorf("%d of %d requests not accepted", total-accepted, total)
	}
}
