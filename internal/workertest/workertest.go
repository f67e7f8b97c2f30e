// Package workertest starts what the tests of the commands and packages
// above streams/worker talk to: an embedded JetStream server (Server), a
// worker on a connection (Run), or both with the built-in pipelines
// (Start), each stopped when the test ends; WaitFor polls a condition with
// a deadline. The worker's own tests, inside its package, cannot import it
// and keep their helpers there.
package workertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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

// Server starts an embedded JetStream server with cfg, on a free loopback
// port and in a temporary store unless cfg names them, and shuts it down
// when t ends.
func Server(t testing.TB, cfg natsembed.Config) *server.Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:-1"
	}
	if cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
	ns, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// Run runs a worker on nc with opts, waits up to ReadyWithin until it is
// ready, and stops it when t ends. The func returned stops it earlier and
// waits for it.
func Run(t testing.TB, nc *nats.Conn, opts ...worker.Option) (*worker.Worker, func()) {
	t.Helper()
	w, err := worker.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	WaitFor(t, ReadyWithin, "the worker ready", func() bool { return w.Ready() == nil })
	return w, stop
}

// WaitFor polls cond until it holds, and fails t when it does not within
// timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Start runs an embedded JetStream server on a free loopback port and a
// worker on it with Pipelines and opts, waits until the worker is ready,
// and stops both when t ends.
func Start(t testing.TB, opts ...worker.Option) *Running {
	t.Helper()
	ns := Server(t, natsembed.Config{})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, stop := Run(t, nc, append([]worker.Option{worker.WithPipelines(Pipelines())}, opts...)...)
	return &Running{URL: ns.ClientURL(), Conn: nc, Worker: w, Stop: stop}
}
