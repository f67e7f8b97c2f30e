package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/promtest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestHealthAndMetrics runs the orchestrator with its built-in model and
// --http on a free port. While NATS is unreachable /healthz answers and
// /readyz does not; beside a worker, /readyz answers once it takes
// requests. /metrics passes promtool check metrics (the same lint, in
// process) and holds the Go runtime's and the process's metrics and the
// replies by status at zero before any reply, no otel_scope_* labels, and
// after a reply its count and its time to first token. With
// --metrics=false there is no /metrics.
func TestHealthAndMetrics(t *testing.T) {
	// No NATS: live, not ready.
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--nats-url", "nats://127.0.0.1:9", "--http", "127.0.0.1:0"}, noEnv, &out)
	}()
	addr := httpAddr(t, &out)
	if code, body := get(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz without NATS: %d %s", code, body)
	}
	if code, body := get(t, addr, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz without NATS: %d %s", code, body)
	}
	cancel()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("stopped while connecting: %v", err)
	}

	r := workertest.Start(t)
	var served syncBuffer
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--nats-url", r.URL, "--http", "127.0.0.1:0", "--builtin-tokens", "12", "--builtin-rate", "0"}, noEnv, &served)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("orchestrator: %v", err)
		}
	})
	addr = httpAddr(t, &served)
	natstest.WaitFor(t, 30*time.Second, "/readyz to answer 200", func() bool {
		code, _ := get(t, addr, "/readyz")
		return code == http.StatusOK
	})

	families := promtest.ScrapeLinted(t, addr)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes",
		"process_cpu_seconds_total", "process_start_time_seconds", "convstream_orchestrator_replies_in_flight", "target_info"} {
		if families[name] == nil {
			t.Errorf("no %s in /metrics", name)
		}
	}
	for _, status := range []string{streams.StreamDone, streams.StreamStopped, streams.StreamInterrupted, streams.StreamError} {
		if v, ok := promtest.SeriesValue(families["convstream_orchestrator_replies_total"], `convstream_stream_status="`+status+`"`); !ok || v != 0 {
			t.Errorf("replies{%s} = %v (there: %v), want 0 from the start", status, v, ok)
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetName(), "otel_scope_") {
					t.Fatalf("%s has label %s: scope labels are off by default", name, l.GetName())
				}
			}
		}
	}

	c, err := client.New(r.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(context.Background(), "scraped", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestReply(context.Background(), streams.ReplyRequest{ConversationID: "scraped", UserMessageID: "u1"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 60*time.Second, "a reply counted done", func() bool {
		v, _ := promtest.SeriesValue(promtest.Scrape(t, addr)["convstream_orchestrator_replies_total"], `convstream_stream_status="done"`)
		return v == 1
	})
	families = promtest.ScrapeLinted(t, addr)
	if f := families["convstream_orchestrator_time_to_first_token_seconds"]; f == nil || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("time to first token after one reply: %v", f)
	}

	// --metrics=false: the probes without /metrics.
	var quiet syncBuffer
	qctx, qcancel := context.WithCancel(context.Background())
	qdone := make(chan error, 1)
	go func() {
		qdone <- run(qctx, []string{"--nats-url", r.URL, "--http", "127.0.0.1:0", "--metrics=false"}, noEnv, &quiet)
	}()
	qaddr := httpAddr(t, &quiet)
	natstest.WaitFor(t, 30*time.Second, "/readyz to answer 200 without metrics", func() bool {
		code, _ := get(t, qaddr, "/readyz")
		return code == http.StatusOK
	})
	if code, _ := get(t, qaddr, "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics with --metrics=false: %d, want 404\n%s", code, quiet.String())
	}
	qcancel()
	if err := <-qdone; err != nil {
		t.Error(err)
	}
}

func noEnv(string) string { return "" }

// httpAddr waits for the log line that names the --http listener and
// returns its address.
func httpAddr(t *testing.T, out *syncBuffer) string {
	t.Helper()
	var addr string
	natstest.WaitFor(t, 30*time.Second, "the HTTP listener", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec struct {
				Msg, Addr string
			}
			if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "serving /healthz") {
				addr = rec.Addr
				return true
			}
		}
		return false
	})
	return addr
}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
