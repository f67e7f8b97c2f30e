package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams/worker"
)

// TestSharedConsumer runs two workers on one unpartitioned consumer, so
// that each gets about every other event of every conversation and its
// cached conversations fall behind the other's, and kills one of them
// (its connection cut) midway: appends, updates and deletes interleaved
// across conversations must leave every conversation equal to Parse, with
// no valid event refused (and so deleted from the stream).
func TestSharedConsumer(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 6
	}
	events, want := natstest.Plan(t, natstest.LoadCorpus(t, "generated-normal.jsonl.gz", n))
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	errs := natstest.Record(t, nc, "convstream.errors.>")
	readers := []*sdkmetric.ManualReader{sdkmetric.NewManualReader(), sdkmetric.NewManualReader()}
	opts := func(i int) []worker.Option {
		return []worker.Option{worker.WithAckWait(2 * time.Second), worker.WithLanes(2),
			worker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(readers[i])))}
	}
	worker.StartWorker(t, nc, opts(0)...)
	ncB, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncB.Close)
	b := worker.StartWorker(t, ncB, opts(1)...)
	c := natstest.NewClient(t, nc)
	last := map[string]uint64{}
	for i, e := range events {
		if i == len(events)/2 {
			ncB.Close() // a crash: what B held comes back after AckWait
		}
		sent, err := c.Send(context.Background(), e.Conv, e.Type, e.Data)
		if err != nil {
			t.Fatal(err)
		}
		last[e.Conv] = sent.Sequence
		if i%2 == 0 {
			// Spread over seconds: the server hands the events to one
			// worker's pull, then to the other's when it expires (each
			// second), so that each conversation moves between them.
			time.Sleep(10 * time.Millisecond)
		}
	}
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("worker B did not stop after losing its connection")
	}
	natstest.CheckStoredAt(t, c, want, last, 30*time.Second)
	if n := errs.Count(""); n != 0 {
		t.Errorf("%d events refused; the first: %v", n, errs.All()[0].Event)
	}
	a, bs := natstest.Sums(t, readers[0]), natstest.Sums(t, readers[1])
	t.Logf("%d conversations, %d events; worker A applied %d, skipped %d, healed %d; worker B (killed halfway) applied %d, healed %d",
		len(want), len(events), a[worker.MetricEventsApplied], a[worker.MetricEventsSkipped], a[worker.MetricEventsHealed],
		bs[worker.MetricEventsApplied], bs[worker.MetricEventsHealed])
}
