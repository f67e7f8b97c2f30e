package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestRestartConverges stops workers mid-stream (once gracefully, once by
// cutting its connection as a crash would), restarts the NATS server on
// the same store, and requires a new worker with a small cache (so that it
// rebuilds conversations from the stream over and over) to bring every
// conversation to the Parse of all its messages.
func TestRestartConverges(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 8
	}
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", n)
	events, want := natstest.Plan(t, cases)
	dir := t.TempDir()
	lastSeq := map[string]uint64{}
	publish := func(c *client.Client, from, to int) {
		t.Helper()
		for _, e := range events[from:to] {
			sent, err := c.Send(context.Background(), e.Conv, e.Type, e.Data)
			if err != nil {
				t.Fatal(err)
			}
			lastSeq[e.Conv] = sent.Sequence
		}
	}
	cut := func(f float64) int { return int(f * float64(len(events))) }
	start := time.Now()

	// Server 1: worker A stopped gracefully while events arrive, worker B
	// cut off mid-stream, and more events published with no worker at all.
	ns1 := natstest.StartServer(t, dir)
	nc1 := natstest.Connect(t, ns1)
	c1 := natstest.NewClient(t, nc1)
	// A short AckWait: what a crashed worker left unacknowledged comes back
	// within the test's patience.
	a := StartWorker(t, nc1, WithCacheConversations(4), WithLanes(2), WithAckWait(2*time.Second))
	go func() {
		time.Sleep(30 * time.Millisecond)
		a.Cancel()
	}()
	publish(c1, 0, cut(0.25))
	a.Stop(t)

	ncB, err := nats.Connect(ns1.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	b := StartWorker(t, ncB, WithCacheConversations(4), WithLanes(2), WithAckWait(2*time.Second))
	go func() {
		time.Sleep(30 * time.Millisecond)
		ncB.Close() // a crash: in-flight acks are lost and redelivered later
	}()
	publish(c1, cut(0.25), cut(0.5))
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("worker B did not stop after losing its connection")
	}
	publish(c1, cut(0.5), cut(0.7))
	progress := appliedUpTo(t, nc1)
	nc1.Close()
	ns1.Shutdown()
	ns1.WaitForShutdown()

	// Server 2 on the same store, worker C, the rest of the events.
	ns2 := natstest.StartServer(t, dir)
	nc2 := natstest.Connect(t, ns2)
	c2 := natstest.NewClient(t, nc2)
	reader := sdkmetric.NewManualReader()
	StartWorker(t, nc2, WithCacheConversations(3), WithLanes(2), WithAckWait(2*time.Second),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	publish(c2, cut(0.7), len(events))

	for conv, live := range want {
		deadline := time.Now().Add(60 * time.Second)
		var snap *streams.Snapshot
		for {
			s, err := c2.Snapshot(context.Background(), conv)
			if err == nil && s.Sequence >= lastSeq[conv] {
				snap = s
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach sequence %d (snapshot at %v, err %v)", conv, lastSeq[conv], snapSeq(s), err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
	rm := natstest.Collect(t, reader)
	counts := natstest.SumsOf(rm)
	if counts[MetricEventsRejected] != 0 {
		t.Errorf("rejections: %v", counts)
	}
	t.Logf("%d conversations, %d events; applied before the server restart: %d conversations at %v; "+
		"after: applied %d, skipped %d, rebuilds %d (%d from a checkpoint), checkpoints written %d; converged in %v",
		len(want), len(events), len(progress), progress, counts[MetricEventsApplied], counts[MetricEventsSkipped],
		counts[MetricRebuilds], sumWhere(rm, MetricRebuilds, "from", "checkpoint"),
		sumWhere(rm, MetricCheckpoints, "outcome", "written"), time.Since(start))
}

// appliedUpTo reads how far each stored snapshot got (sequence by
// conversation), for the log.
func appliedUpTo(t testing.TB, nc *nats.Conn) map[string]uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), "CONVSTREAM_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	c := natstest.NewClient(t, nc)
	for k := range keys.Keys() {
		if s, err := c.Snapshot(context.Background(), k); err == nil {
			out[k] = s.Sequence
		}
	}
	return out
}

// TestRedeliveryIsIdempotent replays every event to a fresh consumer and
// requires nothing to change: each is recognised as applied and skipped.
// Publishing an event twice with the same id stores it once.
func TestRedeliveryIsIdempotent(t *testing.T) {
	cases := natstest.LoadCorpus(t, "reference-suite.jsonl.gz", 5)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	a := StartWorker(t, nc)
	total := 0
	counts := map[string]int{}
	for i, cc := range cases {
		counts[natstest.CaseID(i)] = sendConversation(t, c, natstest.CaseID(i), i, cc)
		total += counts[natstest.CaseID(i)]
	}
	// The same event id again: dropped by JetStream's duplicate window.
	first, err := c.Send(context.Background(), natstest.CaseID(0), streams.TypeMessageDeleted, map[string]any{"id": cases[0].Msgs[0].ID()}, client.WithEventID("delete-once"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Send(context.Background(), natstest.CaseID(0), streams.TypeMessageDeleted, map[string]any{"id": cases[0].Msgs[0].ID()}, client.WithEventID("delete-once"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !again.Duplicate || again.Sequence != first.Sequence {
		t.Errorf("dedup: first %+v, again %+v", first, again)
	}
	counts[natstest.CaseID(0)]++
	total++
	before := map[string]*streams.Snapshot{}
	for conv := range counts {
		before[conv] = natstest.WaitCaughtUp(t, c, conv, 20*time.Second)
	}
	a.Stop(t)

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(context.Background(), "CONVSTREAM_EVENTS", "convstream-worker"); err != nil {
		t.Fatal(err)
	}
	// What compaction left of the events: each is redelivered.
	events, err := js.Stream(context.Background(), "CONVSTREAM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := events.Info(context.Background()); err != nil {
		t.Fatal(err)
	} else if info.State.Msgs < uint64(len(counts)) {
		t.Fatalf("%d events left in the stream, fewer than the %d conversations' last ones", info.State.Msgs, len(counts))
	} else {
		t.Logf("%d events sent, %d left after compaction", total, info.State.Msgs)
		total = int(info.State.Msgs)
	}
	reader := sdkmetric.NewManualReader()
	snaps := natstest.Record(t, nc, "convstream.snapshots.>")
	StartWorker(t, nc, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	var skipped int64
	natstest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d events skipped", total), func() bool {
		skipped = natstest.Sums(t, reader)[MetricEventsSkipped]
		return skipped >= int64(total)
	})
	for conv, b := range before {
		s, err := c.Snapshot(context.Background(), conv)
		if err != nil {
			t.Fatal(err)
		}
		if s.Version != b.Version || s.Sequence != b.Sequence {
			t.Errorf("%s: version %d seq %d after redelivery, was %d %d", conv, s.Version, s.Sequence, b.Version, b.Sequence)
		}
	}
	if n := snaps.Count(""); n != 0 {
		t.Errorf("%d snapshots published on redelivery", n)
	}
	t.Logf("%d events redelivered, %d skipped, 0 applied", total, skipped)
}

func snapSeq(s *streams.Snapshot) any {
	if s == nil {
		return "none"
	}
	return s.Sequence
}
