package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// The helpers shared with other packages' tests (servers, clients, waits,
// the corpus, recorders, loggers) are internal/natstest's; these are those
// that reach inside a Worker.

// Running is a worker started by StartWorker, run until the test ends or
// Stop. It and StartWorker are exported for the package's black-box tests
// (package worker_test), which share them with the tests inside it.
type Running struct {
	W *Worker
	*natstest.Served
}

// StartWorker runs a worker on nc until the test ends (or Stop), with the
// test's logger before opts, and waits until it is ready; a Run that
// returns instead fails the test with its error.
func StartWorker(t testing.TB, nc *nats.Conn, opts ...Option) *Running {
	t.Helper()
	opts = append([]Option{WithLogger(natstest.TestLogger(t))}, opts...)
	w, err := New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &Running{W: w, Served: natstest.Serve(t, w.Run, w.Ready)}
}

// provisionedWorker returns a worker on nc that is not running, with its
// stream and bucket provisioned (as its WithStorage says): a test drives
// its parts directly.
func provisionedWorker(t testing.TB, nc *nats.Conn, opts ...Option) *Worker {
	t.Helper()
	w, err := New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if w.stream, w.snapshots.kv, err = Provision(context.Background(), w.js, w.cfg.subjects, w.cfg.storage, nil); err != nil {
		t.Fatal(err)
	}
	w.reads = read.New(context.Background(), readConfig(w.nc, w.cfg, w.stream, w.snapshots.kv))
	if w.cfg.checkpoints {
		bucket, err := provisionCheckpoints(context.Background(), w.js, w.cfg.subjects, w.cfg.storage, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.cp = newCheckpointer(bucket, w.reads.Keys(context.Background(), bucket), w.writers, w.metrics, w.cfg.logger, w.nc.MaxPayload, w.cfg.checkpointsWaiting,
			w.cfg.limits.conversationOptions())
	}
	return w
}

// SlimPipelines builds real engines of real processors (enginecore.NewFunc):
// "default" keeps role and content, prepends a system message taken from
// params, and counts; "failing" fails in its second processor.
func SlimPipelines() Pipelines {
	slim := enginecore.NewFunc("slim", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Messages = make([]enginecore.Message, 0, len(pc.Messages))
		for _, m := range pc.Messages {
			next.Messages = append(next.Messages, enginecore.Message{"id": m["id"], "role": m["role"], "content": m["content"]})
		}
		return next, nil
	})
	count := enginecore.NewFunc("count", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Metadata["count"] = float64(len(pc.Messages))
		return next, nil
	})
	system := func(params map[string]any) enginecore.Processor {
		text := "You are helpful."
		if cfg, ok := params["system"].(map[string]any); ok {
			if s, ok := cfg["content"].(string); ok {
				text = s
			}
		}
		return enginecore.NewFunc("system", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			next := pc.Derive()
			next.Messages = append([]enginecore.Message{{"role": "system", "content": text}}, pc.Messages...)
			next.Metadata["systemInjected"] = true
			return next, nil
		})
	}
	explode := enginecore.NewFunc("explode", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		return nil, errQuota
	})
	return PipelinesFunc(func(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		var procs []enginecore.Processor
		switch name {
		case DefaultPipeline:
			procs = []enginecore.Processor{slim, system(params), count}
		case "failing":
			procs = []enginecore.Processor{slim, explode, count}
		default:
			return nil, fmt.Errorf("%w: %q", streams.ErrUnknownPipeline, name)
		}
		return enginecore.New(append([]enginecore.Option{enginecore.WithProcessors(procs...)}, opts...)...), nil
	})
}

// ExpectedContext runs the default test pipeline locally on the flat list
// of msgs.
func ExpectedContext(t testing.TB, msgs []*conversation.Message, groups []*conversation.MessageGroup, params map[string]any) *enginecore.PipelineResult {
	t.Helper()
	res, err := conversation.Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]enginecore.Message, len(res.FlatList))
	for i, m := range res.FlatList {
		in[i] = m.Fields()
	}
	eng, err := SlimPipelines().Pipeline(context.Background(), DefaultPipeline, params)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
