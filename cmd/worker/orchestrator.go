package main

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/orchestrator"
)

// startOrchestrator runs the reply orchestrator of --orchestrator in this
// process, on the worker's connection, until ctx ends; wait waits for it.
func startOrchestrator(ctx context.Context, nc *nats.Conn, o *options, subjects streams.Subjects, log *slog.Logger, tel *telemetry, getenv func(string) string) (wait func(), err error) {
	opts, err := o.orchestrator.Open(getenv)
	if err != nil {
		return nil, err
	}
	opts = append(opts, orchestrator.WithSubjects(subjects), orchestrator.WithLogger(log),
		orchestrator.WithTracerProvider(tel.tracer), orchestrator.WithMeterProvider(tel.meter))
	orch, err := orchestrator.New(nc, opts...)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := orch.Run(ctx); err != nil {
			log.Error("orchestrator", "err", err)
		}
	}()
	log.Info("writing replies in-process", "model", o.orchestrator.Model)
	return func() { <-done }, nil
}
