package providers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
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

	run := workertest.Start(t, worker.WithInferenceWait(10*time.Second))
	nc := run.Conn
	ctx := context.Background()
	c, err := client.New(nc)
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
