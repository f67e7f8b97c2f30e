package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
)

// doublingParams are the params of the inference request of issue 35: a
// few hundred bytes configuring PlaceholderVariablesProcessor with
// variables that double at each level, 24 levels deep, so that "{{v24}}"
// expands to 2^24 copies of v0. The worker took 2.2–2.4 GB for it.
func doublingParams(depth int) map[string]any {
	vars := map[string]any{"v0": "ab"}
	for i := 1; i <= depth; i++ {
		prev := "{{v" + strconv.Itoa(i-1) + "}}"
		vars["v"+strconv.Itoa(i)] = prev + prev
	}
	return map[string]any{"PlaceholderVariablesProcessor": map[string]any{"depth": float64(depth), "variableGenerators": vars}}
}

// runningWorker is a worker started as main does, by run.
type runningWorker struct {
	nats, http string
	client     *client.Client
	logs       *syncBuffer
}

// startRun runs the worker with args (on free ports, its store in a
// temporary directory) until the test ends, and connects a client.
func startRun(tb testing.TB, args ...string) *runningWorker {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	type addrs struct{ nats, http string }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	args = append([]string{"--listen", "127.0.0.1:-1", "--http", "127.0.0.1:0", "--data-dir", filepath.Join(tb.TempDir(), "data")}, args...)
	go func() {
		done <- run(ctx, args, func(string) string { return "" }, logs,
			func(_ *worker.Worker, natsURL, httpAddr string) { ready <- addrs{natsURL, httpAddr} })
	}()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("run: %v", err)
		}
	})
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		tb.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		tb.Fatalf("not ready\n%s", logs)
	}
	nc, err := nats.Connect(a.nats)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	c, err := client.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return &runningWorker{nats: a.nats, http: a.http, client: c, logs: logs}
}

// conversation sends a conversation of one user message holding content
// and waits until its snapshot holds it.
func (rw *runningWorker) conversation(tb testing.TB, conv, content string) {
	tb.Helper()
	ctx := context.Background()
	if _, err := rw.client.Send(ctx, conv, streams.TypeMessageAppended,
		map[string]any{"id": "u1", "role": "user", "content": content, "parentId": nil, "createdAt": 1.0}); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := rw.client.Snapshot(ctx, conv); err == nil {
			return
		}
		if time.Now().After(deadline) {
			s, err := rw.client.Snapshot(ctx, conv)
			tb.Fatalf("%s not stored: %+v %v", conv, s, err)
		}
	}
}

// infer sends an inference request and returns the reply.
func (rw *runningWorker) infer(tb testing.TB, conv string, params map[string]any) *event.Event {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ev, err := rw.client.Infer(ctx, streams.InferenceRequest{ConversationID: conv, Params: params})
	if err != nil {
		tb.Fatalf("infer: %v", err)
	}
	return ev
}

// TestInferenceDoublingRefused sends the request of issue 35 to a worker
// started as main does, with the built-in default pipeline: it is answered
// with pipeline.failed, code limit_exceeded, naming the processor and the
// limit (the depth by default; with the depth raised by its flag, the
// expansion bytes), and the worker goes on serving.
func TestInferenceDoublingRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		limit string
	}{
		{"default limits", nil, "maxExpansionDepth exceeded"},
		{"depth raised", []string{"--inference-max-expansion-depth", "30"}, "maxExpansionBytes exceeded"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			rw := startRun(t, tc.args...)
			rw.conversation(t, "bomb", "{{v24}}")
			start := time.Now()
			ev := rw.infer(t, "bomb", doublingParams(24))
			elapsed := time.Since(start)
			if ev.Type() != streams.TypePipelineFailed {
				t.Fatalf("reply %s, want %s: %.300s", ev.Type(), streams.TypePipelineFailed, ev.Data())
			}
			var failed streams.PipelineFailed
			if err := json.Unmarshal(ev.Data(), &failed); err != nil {
				t.Fatal(err)
			}
			if failed.Code != streams.FailedLimit || failed.Processor != "PlaceholderVariablesProcessor" || !strings.Contains(failed.Cause, tc.limit) {
				t.Errorf("failed = %+v", failed)
			}
			t.Logf("refused in %v: %s", elapsed, failed.Message)

			// The worker is alive and serves the next request.
			resp, err := http.Get("http://" + rw.http + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("/healthz: %d", resp.StatusCode)
			}
			rw.conversation(t, "plain", "hello {{name}}")
			ev = rw.infer(t, "plain", map[string]any{"PlaceholderVariablesProcessor": map[string]any{"variableGenerators": map[string]any{"name": "Ann"}}})
			if ev.Type() != streams.TypeInferenceContext || !strings.Contains(string(ev.Data()), "hello Ann") {
				t.Errorf("next request: %s %.300s", ev.Type(), ev.Data())
			}
		})
	}
}

// TestInferenceLimitFlags: the limits' flags and variables.
func TestInferenceLimitFlags(t *testing.T) {
	env := map[string]string{"CONVSTREAM_INFERENCE_MAX_EXPANSION_BYTES": "16MiB", "CONVSTREAM_INFERENCE_MAX_EXPANSION_DEPTH": "12"}
	o, err := parseFlags(nil, func(k string) string { return env[k] }, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.inferenceLimits.MaxExpansionBytes != 16<<20 || o.inferenceLimits.MaxExpansionDepth != 12 {
		t.Errorf("from the environment: %+v", o.inferenceLimits)
	}
	o, err = parseFlags(nil, func(string) string { return "" }, &syncBuffer{})
	if err != nil || o.inferenceLimits.MaxExpansionBytes != 4<<20 || o.inferenceLimits.MaxExpansionDepth != 8 {
		t.Errorf("defaults: %+v %v", o.inferenceLimits, err)
	}
	for _, bad := range [][]string{{"--inference-max-expansion-bytes", "0"}, {"--inference-max-expansion-depth", "-1"}} {
		if _, err := parseFlags(bad, func(string) string { return "" }, &syncBuffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
