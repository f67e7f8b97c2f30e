package loadgen

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
)

// Worker runs cfg against the convstream worker listening under subjects:
// appends to new conversations named run-<n>, the effect being each
// append's snapshot delta. pub publishes; sub hears the deltas (two
// connections, so that neither waits on the other).
func Worker(ctx context.Context, pub, sub *nats.Conn, subjects streams.Subjects, run string, cfg Config) (Result, error) {
	pb, err := newPublisher(pub, cfg.Wait)
	if err != nil {
		return Result{}, err
	}
	s := &workerSink{nc: sub, subjects: subjects, run: run}
	p, err := buildPayloads(cfg, s.conversationID)
	if err != nil {
		return Result{}, err
	}
	return measure(ctx, "worker", pb, s, p, cfg)
}

// Raw runs cfg against a plain JetStream stream and durable pull consumer
// created for the run (and deleted after it), with the same payloads as
// Worker: the physical limit of publishing and consuming them.
func Raw(ctx context.Context, pub *nats.Conn, run string, cfg Config) (Result, error) {
	pb, err := newPublisher(pub, cfg.Wait)
	if err != nil {
		return Result{}, err
	}
	name := "LOADGEN_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(run))
	s := &rawSink{js: pb.js, name: name, prefix: "loadgen." + run}
	p, err := buildPayloads(cfg, func(conv int) string { return fmt.Sprintf("%s-%d", run, conv) })
	if err != nil {
		return Result{}, err
	}
	return measure(ctx, "raw JetStream", pb, s, p, cfg)
}
