package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// blockingPipelines builds engines whose only processor waits until
// release is closed (or its run ends), counting the runs started.
func blockingPipelines(release <-chan struct{}, started chan<- struct{}) worker.Pipelines {
	return worker.PipelinesFunc(func(_ context.Context, name string, _ map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
		p := enginecore.NewFunc("block", func(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return pc, nil
		})
		return enginecore.New(append([]enginecore.Option{enginecore.WithProcessors(p)}, opts...)...), nil
	})
}

// TestInferenceFloodBesideEvents: a flood of inference requests while
// every inference worker is stuck in its pipeline. Without admission
// control the requests waited in the service's subscription for as long
// as the backlog took (a median of 22 s beside live events). Now the
// workers' requests run, the queue's wait, and every other request is
// refused busy with a retry hint while the pipelines are still stuck (so
// without waiting for any of them); events sent meanwhile to other
// conversations are all applied; once the pipelines go on, the queued
// requests are served. A second round with a short queue wait refuses the
// queued requests busy when their wait ends, the workers still stuck.
func TestInferenceFloodBesideEvents(t *testing.T) {
	const workers, queue, flood = 2, 4, 200
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	started := make(chan struct{}, flood)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	worker.StartWorker(t, nc, worker.WithPipelines(blockingPipelines(release, started)),
		worker.WithInferenceWorkers(workers), worker.WithInferenceQueue(queue), worker.WithInferenceQueueWait(time.Minute),
		worker.WithInferenceTimeout(2*time.Minute))
	c := natstest.NewClient(t, nc)
	if _, err := c.Send(context.Background(), "asked", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, "asked", 30*time.Second)

	type reply struct {
		ev  *event.Event
		err error
	}
	replies := make(chan reply, flood)
	var wg sync.WaitGroup
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "asked"})
			replies <- reply{ev, err}
		}()
	}
	for range workers {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the pipelines did not start")
		}
	}
	// Every request but those running and waiting is refused, while the
	// running ones are stuck.
	for i := range flood - workers - queue {
		var r reply
		select {
		case r = <-replies:
		case <-time.After(60 * time.Second):
			t.Fatalf("%d busy replies of %d", i, flood-workers-queue)
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		rej := natstest.InferData[streams.EventRejected](t, r.ev, streams.TypeEventRejected)
		if rej.Code != streams.CodeBusy || rej.RetryAfterMs <= 0 || rej.ConversationID != "asked" ||
			!strings.Contains(rej.Reason, "--inference-queue") {
			t.Fatalf("refusal %+v", rej)
		}
		if i == 0 {
			t.Log(rej.Reason)
		}
	}

	// Events beside the flood are all applied while it is stuck.
	for i := range 20 {
		conv := fmt.Sprintf("live-%d", i)
		parent := any(nil)
		for j := range 10 {
			id := fmt.Sprintf("m%d", j)
			if _, err := c.Send(context.Background(), conv, streams.TypeMessageAppended,
				map[string]any{"id": id, "role": "user", "content": "x", "parentId": parent}); err != nil {
				t.Fatal(err)
			}
			parent = id
		}
	}
	for i := range 20 {
		snap := natstest.WaitCaughtUp(t, c, fmt.Sprintf("live-%d", i), 60*time.Second)
		var flat []map[string]any
		if err := json.Unmarshal(snap.FlatList, &flat); err != nil || len(flat) != 10 {
			t.Fatalf("live-%d: %d messages (%v)", i, len(flat), err)
		}
	}
	select {
	case r := <-replies:
		t.Fatalf("a reply before the pipelines went on: %v %v", r.err, r.ev)
	default:
	}

	once.Do(func() { close(release) })
	for range workers + queue {
		r := <-replies
		if r.err != nil {
			t.Fatal(r.err)
		}
		natstest.InferData[streams.InferenceContext](t, r.ev, streams.TypeInferenceContext)
	}
	wg.Wait()
}

// TestInferenceQueueWait: a request that waits its queue wait without a
// free worker is refused busy then, naming the wait, and the worker
// serves requests again once its pipelines end.
func TestInferenceQueueWait(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	started := make(chan struct{}, 10)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	worker.StartWorker(t, nc, worker.WithPipelines(blockingPipelines(release, started)),
		worker.WithInferenceWorkers(1), worker.WithInferenceQueue(1), worker.WithInferenceQueueWait(50*time.Millisecond),
		worker.WithInferenceTimeout(2*time.Minute))
	c := natstest.NewClient(t, nc)
	if _, err := c.Send(context.Background(), "asked", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, "asked", 30*time.Second)
	infer := func() <-chan *event.Event {
		out := make(chan *event.Event, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "asked"})
			if err != nil {
				t.Error(err)
			}
			out <- ev
		}()
		return out
	}
	first := infer()
	<-started
	ev := <-infer() // queued, then refused when its wait ends
	rej := natstest.InferData[streams.EventRejected](t, ev, streams.TypeEventRejected)
	if rej.Code != streams.CodeBusy || !strings.Contains(rej.Reason, "--inference-queue-wait") || rej.RetryAfterMs != 50 {
		t.Errorf("refusal %+v", rej)
	}
	once.Do(func() { close(release) })
	natstest.InferData[streams.InferenceContext](t, <-first, streams.TypeInferenceContext)
	natstest.InferData[streams.InferenceContext](t, <-infer(), streams.TypeInferenceContext)
}
