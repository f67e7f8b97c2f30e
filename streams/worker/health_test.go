package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func status(t *testing.T, h http.Handler, path string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// TestReadiness: /readyz is 503 before the worker consumes and while NATS
// is away, 200 otherwise; /healthz is always 200. The worker resumes
// applying events when the server comes back on the same store.
func TestReadiness(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := New(nc, WithLogger(natstest.TestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	h := w.HealthHandler()
	if !errors.Is(w.Ready(), streams.ErrNotReady) || status(t, h, "/readyz") != 503 || status(t, h, "/healthz") != 200 {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	natstest.WaitFor(t, 10*time.Second, "ready", func() bool { return status(t, h, "/readyz") == 200 })

	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.WaitFor(t, 10*time.Second, "not ready while disconnected", func() bool { return status(t, h, "/readyz") == 503 })
	if status(t, h, "/healthz") != 200 {
		t.Error("healthz while disconnected")
	}

	ns2, err := natsembed.Start(natsembed.Config{Listen: fmt.Sprintf("127.0.0.1:%d", port), StoreDir: dir})
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", port, err)
	}
	t.Cleanup(func() { ns2.Shutdown(); ns2.WaitForShutdown() })
	start := time.Now()
	natstest.WaitFor(t, 10*time.Second, "ready after reconnecting", func() bool { return status(t, h, "/readyz") == 200 })
	t.Logf("ready %v after the server came back", time.Since(start))
	c := natstest.NewClient(t, nc)
	if _, err := c.Send(context.Background(), "back", streams.TypeMessageAppended, map[string]any{"id": "m1"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "back", 1, 20*time.Second)
	t.Logf("event applied %v after the server came back", time.Since(start))
	cancel()
	<-done
}

// TestReadinessWhileStoresFail: while the snapshot bucket refuses every
// write (here a byte limit it is at), the worker keeps its events
// unacknowledged and retries; past the store stall limit /readyz is 503
// and says why, /healthz stays 200; once the bucket takes writes again the
// retries store the snapshot and the worker is ready again.
func TestReadinessWhileStoresFail(t *testing.T) {
	ns := natstest.StartServer(t, t.TempDir())
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithStoreStallLimit(300*time.Millisecond), WithSnapshotInterval(10*time.Millisecond),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	writes := func(outcome string) int64 {
		return sumWhere(natstest.Collect(t, reader), MetricSnapshotWrites, "outcome", outcome)
	}
	h := r.W.HealthHandler()
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	if _, err := c.Send(ctx, "full", streams.TypeMessageAppended, map[string]any{"id": "m1"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "full", 1, 10*time.Second)

	js := r.W.js
	bucket, err := js.Stream(ctx, "KV_"+r.W.cfg.subjects.SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	info, err := bucket.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	limited := info.Config
	limited.MaxBytes, limited.Discard = int64(info.State.Bytes), jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, limited); err != nil {
		t.Fatal(err)
	}
	if r.W.Ready() != nil {
		t.Fatal("not ready before any write failed")
	}
	ack, err := c.Send(ctx, "full", streams.TypeMessageAppended, map[string]any{"id": "m2", "parentId": "m1"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 10*time.Second, "not ready while writes fail", func() bool { return status(t, h, "/readyz") == 503 })
	err = r.W.Ready()
	t.Logf("readiness: %v", err)
	if !errors.Is(err, streams.ErrNotReady) || !strings.Contains(err.Error(), "snapshot writes failing") {
		t.Errorf("readiness while writes fail: %v", err)
	}
	if status(t, h, "/healthz") != 200 {
		t.Error("healthz while writes fail")
	}
	// Not ready comes after the first failed write; the retries, 100 ms
	// apart, are counted too.
	natstest.WaitFor(t, 10*time.Second, "two snapshot writes counted failed", func() bool { return writes("failed") >= 2 })

	limited.MaxBytes = -1
	if _, err := js.UpdateStream(ctx, limited); err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "full", ack.Sequence, 20*time.Second)
	natstest.WaitFor(t, 5*time.Second, "ready once writes succeed", func() bool { return status(t, h, "/readyz") == 200 })
	if stored := writes("stored"); stored < 2 {
		t.Errorf("%d snapshot writes counted stored, want the first and the one after the limit went", stored)
	}
	if n := writes("conflict") + writes("too_large"); n != 0 {
		t.Errorf("%d snapshot writes counted as conflicts or too large", n)
	}
}
