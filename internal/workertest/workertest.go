// Package workertest starts what the tests of the commands and packages
// above streams talk to: an embedded JetStream server and a worker serving
// the built-in pipelines, both stopped when the test ends.
package workertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// ReadyWithin is how long Start waits for the worker: generous, since the
// machine running the tests may be loaded.
const ReadyWithin = time.Minute

// Running is a started server and worker.
type Running struct {
	// URL is the server's client URL.
	URL string
	// Conn is a connection of the test's own to the server.
	Conn   *nats.Conn
	Worker *worker.Worker
	// Stop stops the worker and waits for it, leaving the server and what
	// it stores; the test's end calls it too.
	Stop func()
}

// Pipelines serves the built-in specs (processors.BuiltinSpec) with an
// inference request's params merged over them.
func Pipelines() worker.Pipelines {
	return worker.PipelinesFunc(func(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		spec, ok := processors.BuiltinSpec(name)
		if !ok {
			return nil, streams.ErrUnknownPipeline
		}
		spec, err := spec.WithParams(params)
		if err != nil {
			return nil, err
		}
		return processors.Default().Build(spec, opts...)
	})
}

// Start runs an embedded JetStream server on a free loopback port and a
// worker on it with Pipelines and opts, waits until the worker is ready,
// and stops both when t ends.
func Start(t testing.TB, opts ...worker.Option) *Running {
	t.Helper()
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := worker.New(nc, append([]worker.Option{worker.WithPipelines(Pipelines())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	deadline := time.Now().Add(ReadyWithin)
	for w.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("worker not ready after %v: %v", ReadyWithin, w.Ready())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return &Running{URL: ns.ClientURL(), Conn: nc, Worker: w, Stop: stop}
}
