// Package workertest starts what the tests of the commands and packages
// above streams/worker talk to: an embedded JetStream server (Server), a
// worker on a connection (Run), or both with the built-in pipelines
// (Start), each stopped when the test ends. What does not need a worker
// (a plain server, a connection, a wait for a condition, a run until
// ready) is internal/natstest's, which the worker's own tests use too.
package workertest

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

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

// Run runs a worker on nc with opts, waits up to natstest.ReadyWithin
// until it is ready, and stops it when t ends. The func returned stops it
// earlier and waits for it.
func Run(t testing.TB, nc *nats.Conn, opts ...worker.Option) (*worker.Worker, func()) {
	t.Helper()
	w, err := worker.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.Serve(t, w.Run, w.Ready)
	return w, sync.OnceFunc(func() { s.Cancel(); <-s.Done() })
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
