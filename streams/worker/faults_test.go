package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// sendRetrying sends an event until JetStream acknowledges it, with the
// same event id every time, as a publisher riding out an outage does.
func sendRetrying(ctx context.Context, c *client.Client, conv, typ, id string, data any) (attempts int, err error) {
	for {
		attempts++
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = c.Send(sctx, conv, typ, data, client.WithEventID(id))
		cancel()
		if err == nil || ctx.Err() != nil {
			return attempts, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrokerRestartMidStream publishes a stream of events over several
// conversations while the NATS server is shut down and restarted on the
// same store and port. The publisher retries what fails with the same event
// id; the worker reconnects by itself (Connect: forever, 250 ms apart) and
// resumes from its durable consumer. Readiness is 503 during the outage;
// afterwards every event is stored once and applied once: each
// conversation's snapshot equals Parse of its messages, at version = its
// event count.
func TestBrokerRestartMidStream(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	url := ns.ClientURL()
	ncW, err := streams.Connect(streams.ConnConfig{URL: url, Name: "worker", Logger: natstest.TestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncW.Close)
	reader := sdkmetric.NewManualReader()
	r := worker.StartWorker(t, ncW, worker.WithAckWait(2*time.Second),
		worker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	ncP, err := streams.Connect(streams.ConnConfig{URL: url, Name: "publisher"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncP.Close)
	pub := natstest.NewClient(t, ncP)

	const convs, perConv = 10, 30
	want := map[string]*conversation.Conversation{}
	for i := range convs {
		want[fmt.Sprintf("br%d", i)] = conversation.NewConversation()
	}
	var published, retried atomic.Int64
	pubDone := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for k := range perConv {
			for i := range convs {
				conv := fmt.Sprintf("br%d", i)
				data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": fmt.Sprintf("%s/%d", conv, k)}
				if k > 0 {
					data["parentId"] = fmt.Sprintf("m%d", k-1)
				}
				n, err := sendRetrying(ctx, pub, conv, streams.TypeMessageAppended, fmt.Sprintf("%s-%d", conv, k), data)
				if err != nil {
					pubDone <- err
					return
				}
				retried.Add(int64(n - 1))
				published.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}
		pubDone <- nil
	}()
	for i := range convs {
		for k := range perConv {
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": fmt.Sprintf("br%d/%d", i, k)}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := want[fmt.Sprintf("br%d", i)].Append(m); err != nil {
				t.Fatal(err)
			}
		}
	}

	natstest.WaitFor(t, 20*time.Second, "a third published", func() bool { return published.Load() >= convs*perConv/3 })
	outageAt := published.Load()
	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.WaitFor(t, 10*time.Second, "not ready during the outage", func() bool { return errors.Is(r.W.Ready(), streams.ErrNotReady) })
	time.Sleep(time.Second) // the publisher keeps trying meanwhile
	ns2, err := natsembed.Start(natsembed.Config{Listen: fmt.Sprintf("127.0.0.1:%d", port), StoreDir: dir})
	if err != nil {
		t.Skipf("port %d taken meanwhile: %v", port, err)
	}
	t.Cleanup(func() { ns2.Shutdown(); ns2.WaitForShutdown() })
	back := time.Now()
	natstest.WaitFor(t, 20*time.Second, "ready after the restart", func() bool { return r.W.Ready() == nil })
	readyAfter := time.Since(back)
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}
	publishedAfter := time.Since(back)
	c := natstest.NewClient(t, ncP)
	for conv, live := range want {
		last := natstest.LastEventSeq(t, c, conv)
		snap := natstest.WaitVersion(t, c, conv, last, 30*time.Second)
		if snap.Version != last || snap.Sequence != last {
			t.Errorf("%s: version %d, sequence %d, want both the last event's sequence %d", conv, snap.Version, snap.Sequence, last)
		}
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
	js, err := jetstream.New(ncP)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), "CONVSTREAM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Counted by sequence: compaction purges what checkpoints cover, and
	// the publishers' message ids keep a retried publish from a second one.
	if info.State.LastSeq != convs*perConv {
		t.Errorf("stream stored %d events, want %d", info.State.LastSeq, convs*perConv)
	}
	appliedAfter := time.Since(back)
	r.Stop(t) // before the server's cleanup, or the worker's flush waits for it
	s := natstest.Sums(t, reader)
	if s[worker.MetricEventsApplied] != convs*perConv || s[worker.MetricEventsRejected] != 0 {
		t.Errorf("metrics: %v", s)
	}
	t.Logf("%d events over %d conversations; outage after %d, %d publish retries; ready %v after the server came back, all published after %v, all applied after %v; "+
		"applied %d, skipped %d, failed %d, rebuilds %d",
		convs*perConv, convs, outageAt, retried.Load(), readyAfter.Round(time.Millisecond), publishedAfter.Round(time.Millisecond), appliedAfter.Round(time.Millisecond),
		s[worker.MetricEventsApplied], s[worker.MetricEventsSkipped], s[worker.MetricEventsFailed], s[worker.MetricRebuilds])
}

// TestAckTimeoutRedelivery runs the worker as a NATS user that may not
// publish acknowledgements, so that every event it applies is redelivered
// after AckWait, again and again: each must be applied once (one version,
// one snapshot) and skipped on every redelivery.
func TestAckTimeoutRedelivery(t *testing.T) {
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(),
		ConfigFile: natstest.WriteConfig(t, `authorization { users: [
  { user: worker, password: w, permissions: { publish: { deny: ["$JS.ACK.>"] } } }
  { user: client, password: c }
] }
`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	ncW, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: "worker", Password: "w"},
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // the denied acks
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncW.Close)
	ncC, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: "client", Password: "c"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncC.Close)
	snaps := natstest.Record(t, ncC, "convstream.snapshots.>")
	reader := sdkmetric.NewManualReader()
	worker.StartWorker(t, ncW, worker.WithAckWait(300*time.Millisecond),
		worker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, ncC)
	const n = 5
	for k := range n {
		data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user"}
		if k > 0 {
			data["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		if _, err := c.Send(context.Background(), "ackwait", streams.TypeMessageAppended, data); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitCaughtUp(t, c, "ackwait", 10*time.Second)
	natstest.WaitFor(t, 20*time.Second, "three redeliveries of each event", func() bool {
		return natstest.Sums(t, reader)[worker.MetricEventsSkipped] >= 3*n
	})
	snap, err := c.Snapshot(context.Background(), "ackwait")
	if err != nil {
		t.Fatal(err)
	}
	s := natstest.Sums(t, reader)
	if snap.Version != n || s[worker.MetricEventsApplied] != n || snaps.Count("") != n {
		t.Errorf("version %d, applied %d, snapshots published %d; want %d each", snap.Version, s[worker.MetricEventsApplied], snaps.Count(""), n)
	}
	t.Logf("%d events, acks denied: applied %d, skipped %d on redelivery, version %d, %d snapshots published",
		n, s[worker.MetricEventsApplied], s[worker.MetricEventsSkipped], snap.Version, snaps.Count(""))
}

// TestSameEventThreeTimes publishes one CloudEvent three times: with its
// Nats-Msg-Id JetStream stores it once; without (a publisher that does not
// set it, or a copy after the duplicate window) it is stored three times,
// and the conversation's content still changes once: the copies of an
// append are no-ops and those of a delete are refused (not_found).
func TestSameEventThreeTimes(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	errs := natstest.Record(t, nc, "convstream.errors.>")
	worker.StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	// With Nats-Msg-Id.
	var seqs []uint64
	for range 3 {
		sent, err := c.Send(ctx, "thrice", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "once"}, client.WithEventID("ev-1"))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, sent.Sequence)
	}
	if seqs[0] != seqs[1] || seqs[1] != seqs[2] {
		t.Errorf("sequences %v: stored more than once", seqs)
	}
	first := natstest.WaitVersion(t, c, "thrice", 1, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if s, _ := c.Snapshot(ctx, "thrice"); s.Version != seqs[0] {
		t.Errorf("version %d after one event sent three times", s.Version)
	}

	// Without: the same encoded CloudEvents, Nats-Msg-Id removed.
	raw := func(typ string, data any) (seqs []uint64) {
		ev, err := streams.NewEvent("ev-raw-"+typ, typ, "urn:test", "thrice", data)
		if err != nil {
			t.Fatal(err)
		}
		m, err := streams.EncodeEvent("convstream.events.thrice", ev, streams.Structured)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Del(jetstream.MsgIDHeader)
		for range 3 {
			ack, err := js.PublishMsg(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, ack.Sequence)
		}
		return seqs
	}
	raw(streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "content": "hi", "parentId": "m1"})
	deletes := raw(streams.TypeMessageDeleted, map[string]any{"id": "m1"})
	natstest.WaitFor(t, 10*time.Second, "two delete copies refused", func() bool { return errs.Count("convstream.errors.thrice") >= 2 })
	natstest.WaitVersion(t, c, "thrice", deletes[0], 10*time.Second) // the first copy applies
	time.Sleep(200 * time.Millisecond)
	snap, err := c.Snapshot(ctx, "thrice")
	if err != nil {
		t.Fatal(err)
	}
	live := conversation.NewConversation()
	for _, d := range []map[string]any{{"id": "m1", "role": "user", "content": "once"}, {"id": "m2", "role": "assistant", "content": "hi", "parentId": "m1"}} {
		m, _ := conversation.NewMessage(d)
		if err := live.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := live.Delete("m1"); err != nil {
		t.Fatal(err)
	}
	res, err := live.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, res); d != "" {
		t.Errorf("content after triplicates: %s", d)
	}
	if n := errs.Count("convstream.errors.thrice"); n != 2 {
		t.Errorf("%d rejections, want 2 (the delete's copies)", n)
	}
	t.Logf("with Nats-Msg-Id: stored once at seq %d, version %d; without: append ×3 → versions 2–4 "+
		"(copies are no-ops that republish the snapshot), delete ×1 applied + 2 refused not_found; final version %d",
		seqs[0], first.Version, snap.Version)
}

// TestRedeliveryOutOfOrder: events a dead worker held come back one by
// one after AckWait, interleaved with new ones. Here the dead worker is a
// client that fetched S0 (append m1) and, later, S1 (append m2) from the
// worker's durable consumer and never acknowledged them. The worker gets
// S0 back first and caches the conversation at S0; then a new event S2
// (update m2) arrives before S1 comes back. S2 must not be applied to the
// cached state that lacks m2: the conversation is rebuilt past S1, S2
// applies, and S1's redelivery is skipped.
func TestRedeliveryOutOfOrder(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	errs := natstest.Record(t, nc, "convstream.errors.>")
	opts := []worker.Option{worker.WithAckWait(time.Second)}
	worker.StartWorker(t, nc, opts...).Stop(t) // provisions the stream and the consumer
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	if _, err := c.Send(ctx, "ooo", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "ooo", streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "parentId": "m1"}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, "CONVSTREAM_EVENTS", "convstream-worker")
	if err != nil {
		t.Fatal(err)
	}
	steal := func() {
		b, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for range b.Messages() {
		}
	}
	steal() // S0, never acknowledged
	time.Sleep(600 * time.Millisecond)
	steal() // S1, comes back 600 ms after S0
	worker.StartWorker(t, nc, opts...)
	natstest.WaitVersion(t, c, "ooo", 1, 10*time.Second) // S0 redelivered and applied alone
	edit, err := c.Send(ctx, "ooo", streams.TypeMessageUpdated, map[string]any{"id": "m2", "content": "edited"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "ooo", edit.Sequence, 10*time.Second)
	time.Sleep(time.Second) // S1's redelivery
	if n := errs.Count(""); n != 0 {
		t.Fatalf("%d rejections: %v", n, errs.All()[0].Event)
	}
	snap, err := c.Snapshot(ctx, "ooo")
	if err != nil {
		t.Fatal(err)
	}
	var flat []map[string]any
	if err := json.Unmarshal(snap.FlatList, &flat); err != nil {
		t.Fatal(err)
	}
	if len(flat) != 2 || flat[1]["content"] != "edited" {
		t.Errorf("flat list %s", snap.FlatList)
	}
	t.Logf("version %d, flat list %s", snap.Version, snap.FlatList)
}
