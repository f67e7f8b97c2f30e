package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// holdLoads takes every load slot of w, so that its loads begin and wait
// (and the events of conversations new to it park on their lanes), until
// the returned release frees them.
func holdLoads(w *Worker) (release func()) {
	for range cap(w.loads.slots) {
		w.loads.slots <- struct{}{}
	}
	return func() {
		for range cap(w.loads.slots) {
			<-w.loads.slots
		}
	}
}

// sendParked holds every load of w (holdLoads), sends events with c and
// waits until every one of them is parked; release lets the loads go on.
func sendParked(t testing.TB, w *Worker, c *client.Client, events []natstest.PlannedEvent) (release func()) {
	t.Helper()
	release = holdLoads(w)
	for _, e := range events {
		if _, err := c.Send(context.Background(), e.Conv, e.Type, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 10*time.Second, "every event parked", func() bool { return parkedEvents(t, w) == len(events) })
	return release
}

// parkedEvents counts the deliveries parked on w's lanes for loads.
func parkedEvents(t testing.TB, w *Worker) int {
	t.Helper()
	var n atomic.Int64
	err := w.lanes.callAll(context.Background(), func(l *lane) {
		for _, p := range l.loads {
			n.Add(int64(len(p.parked)))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(n.Load())
}

// TestLoadsParkEvents holds every load of a worker: the events of
// conversations new to it (groups, appends, updates and deletes) park on
// its lanes, all of them, while the lanes stay free; once the loads go
// on, each conversation's events apply in the order they came, and every
// conversation ends equal to Parse of its messages. The gauges count the
// loads and the parked events.
func TestLoadsParkEvents(t *testing.T) {
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 12)
	events, want := natstest.Plan(t, cases)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithLanes(2), WithLoads(2),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)

	release := sendParked(t, r.W, c, events)
	// The lanes are not held up: a task on each runs at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.W.lanes.callAll(ctx, func(*lane) {}); err != nil {
		t.Fatalf("lanes held up while their conversations load: %v", err)
	}
	checkGauges := func(loads, parked int) {
		t.Helper()
		g := gauges(t, reader)
		if g[MetricLoads] != int64(loads) || g[MetricEventsParked] != int64(parked) {
			t.Errorf("%s = %d and %s = %d; want %d and %d", MetricLoads, g[MetricLoads],
				MetricEventsParked, g[MetricEventsParked], loads, parked)
		}
	}
	checkGauges(len(cases), len(events))

	release()
	natstest.CheckStored(t, c, want, 30*time.Second)
	if n := parkedEvents(t, r.W); n != 0 {
		t.Errorf("%d events still parked", n)
	}
	checkGauges(0, 0)
}

// gauges collects reader's int64 gauges of one data point, by name.
func gauges(t testing.TB, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, sm := range natstest.Collect(t, reader).ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && len(g.DataPoints) == 1 {
				out[m.Name] = g.DataPoints[0].Value
			}
		}
	}
	return out
}

// TestStopWaitsForLoads stops a worker whose loads wait, with every event
// parked: Run returns only once the loads are done, and by then every
// event is applied, stored and acknowledged.
func TestStopWaitsForLoads(t *testing.T) {
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 8)
	events, want := natstest.Plan(t, cases)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithLanes(2), WithLoads(2))
	c := natstest.NewClient(t, nc)

	release := sendParked(t, r.W, c, events)
	r.Cancel()
	select {
	case <-r.Done():
		t.Fatal("Run returned with loads under way")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	r.Stop(t)

	// With no worker running: what the stop stored is all there is.
	natstest.CheckStored(t, c, want, time.Second)
	ctx := context.Background()
	cons, err := c.JetStream().Consumer(ctx, c.Subjects().EventsStream(), r.W.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("after the stop: %d events unacknowledged, %d not delivered; want none", info.NumAckPending, info.NumPending)
	}
}

// TestHandOffReturnsParkedEvents has a worker whose loads wait, every
// event parked, hand a partition off: the events parked for that
// partition's conversations go back to the server, unapplied, and the
// next owner applies them; once the loads go on, the worker applies the
// rest. Every event is applied once.
func TestHandOffReturnsParkedEvents(t *testing.T) {
	ns := natstest.StartServer(t, "")
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	a := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recA, WithLoads(2))...)
	c := natstest.NewClient(t, natstest.Connect(t, ns))

	release := holdLoads(a.W)
	const convs = 20
	sent := newAppends(t, c)
	for k := range convs {
		conv := fmt.Sprintf("pk-%02d", k)
		sent.send(conv, conv+"-e0", map[string]any{"id": "m0", "role": "user", "content": "hello " + conv, "createdAt": 1000})
		sent.send(conv, conv+"-e1", map[string]any{"id": "m1", "role": "assistant", "content": "hi", "parentId": "m0", "createdAt": 1001})
	}
	natstest.WaitFor(t, 10*time.Second, "every event parked, both partitions owned", func() bool {
		return parkedEvents(t, a.W) == 2*convs && len(a.W.OwnedPartitions()) == 2
	})

	StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recB)...)
	natstest.WaitFor(t, 20*time.Second, "a partition handed off", func() bool { return len(a.W.OwnedPartitions()) == 1 })
	if n := parkedEvents(t, a.W); n == 0 || n == 2*convs {
		t.Errorf("%d events parked after the hand-off, want those of one partition of two", n)
	}
	release()
	sent.waitApplied()
	checkAppliedOnce(t, 2*convs, recA, recB)
}

// TestInferenceLoadsForRead asks a fresh worker for the context of
// conversations it does not hold: each is loaded for the read (off its
// lane), the context is the pipeline's output on the stored conversation,
// and the lane keeps the state loaded.
func TestInferenceLoadsForRead(t *testing.T) {
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 3)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	first := StartWorker(t, nc)
	for i, cc := range cases {
		sendConversation(t, c, natstest.CaseID(i), i, cc)
		natstest.WaitCaughtUp(t, c, natstest.CaseID(i), 20*time.Second)
	}
	first.Stop(t)

	r := StartWorker(t, nc, WithPipelines(SlimPipelines()), WithLanes(1))
	for i, cc := range cases {
		conv := natstest.CaseID(i)
		ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: conv, Format: "raw"})
		if err != nil {
			t.Fatal(err)
		}
		got := natstest.InferData[streams.InferenceContext](t, ev, streams.TypeInferenceContext)
		want := ExpectedContext(t, cc.Msgs, cc.Groups, nil)
		if d := jsondiff.Diff(natstest.Decoded(t, want.Messages), natstest.Decoded(t, got.Messages)); d != "" {
			t.Errorf("%s: messages differ: %s", conv, d)
		}
		var held bool
		if err := r.W.lanes.callAll(ctx, func(l *lane) { held = l.cache.Peek(conv) != nil }); err != nil {
			t.Fatal(err)
		}
		if !held {
			t.Errorf("%s: the lane does not hold the state loaded for the read", conv)
		}
	}
}
