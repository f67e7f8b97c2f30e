package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// freePort returns a loopback port that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestWaitsForNATS starts the worker before its NATS server, as Kubernetes
// may: the worker keeps trying, is live and not ready (naming the URL it
// waits for) meanwhile, and serves once the server is up.
func TestWaitsForNATS(t *testing.T) {
	natsAddr, httpAddr := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--nats-url", "nats://user:pw@" + natsAddr, "--http", httpAddr},
			func(string) string { return "" }, logs,
			func(*worker.Worker, string, string) { close(ready) })
	}()

	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := httpGet("http://" + httpAddr + "/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for NATS at nats://"+natsAddr) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the worker ended without NATS: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz: %d %q\n%s", code, body, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := httpGet("http://" + httpAddr + "/healthz"); code != http.StatusOK {
		t.Errorf("healthz while waiting: %d %q", code, body)
	}
	time.Sleep(600 * time.Millisecond) // a few failed attempts
	if strings.Contains(logs.String(), "pw") {
		t.Errorf("the password was logged:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "NATS not reachable") {
		t.Errorf("no log of the wait:\n%s", logs)
	}

	ns, err := natsembed.Start(natsembed.Config{Listen: natsAddr, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready 30 s after NATS started\n%s", logs)
	}
	if code, body := httpGet("http://" + httpAddr + "/readyz"); code != http.StatusOK {
		t.Errorf("readyz once connected: %d %q", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
