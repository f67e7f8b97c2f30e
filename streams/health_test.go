package streams

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	ns := startServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := NewWorker(nc, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	h := w.HealthHandler()
	if !errors.Is(w.Ready(), ErrNotReady) || status(t, h, "/readyz") != 503 || status(t, h, "/healthz") != 200 {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 10*time.Second, "ready", func() bool { return status(t, h, "/readyz") == 200 })

	ns.Shutdown()
	ns.WaitForShutdown()
	waitFor(t, 10*time.Second, "not ready while disconnected", func() bool { return status(t, h, "/readyz") == 503 })
	if status(t, h, "/healthz") != 200 {
		t.Error("healthz while disconnected")
	}

	ns2, err := StartEmbedded(EmbeddedConfig{Listen: fmt.Sprintf("127.0.0.1:%d", port), StoreDir: dir})
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", port, err)
	}
	t.Cleanup(func() { ns2.Shutdown(); ns2.WaitForShutdown() })
	start := time.Now()
	waitFor(t, 10*time.Second, "ready after reconnecting", func() bool { return status(t, h, "/readyz") == 200 })
	t.Logf("ready %v after the server came back", time.Since(start))
	c := newClient(t, nc)
	if _, err := c.Send(context.Background(), "back", TypeMessageAppended, map[string]any{"id": "m1"}); err != nil {
		t.Fatal(err)
	}
	waitVersion(t, c, "back", 1, 20*time.Second)
	t.Logf("event applied %v after the server came back", time.Since(start))
	cancel()
	<-done
}
