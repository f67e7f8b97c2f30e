package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
)

// startWorker starts an embedded JetStream server and a worker on it with
// the default pipeline, and points CONVSTREAM_NATS_URL at the server.
func startWorker(t *testing.T) {
	t.Helper()
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
	pipelines := streams.PipelinesFunc(func(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		if name != streams.DefaultPipeline {
			return nil, streams.ErrUnknownPipeline
		}
		spec := processors.DefaultSpec()
		for proc, cfg := range params {
			obj, _ := cfg.(map[string]any)
			if err := spec.Configure(proc, obj); err != nil {
				return nil, err
			}
		}
		return processors.Default().Build(spec, opts...)
	})
	w, err := streams.NewWorker(nc, streams.WithPipelines(pipelines))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// Generous: the machine running the tests may be loaded.
	deadline := time.Now().Add(time.Minute)
	for w.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("worker not ready after a minute: %v", w.Ready())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Setenv("CONVSTREAM_NATS_URL", ns.ClientURL())
}

// convload runs convload with args and returns its status, stdout and
// stderr.
func convload(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}
