package worker

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPendingAcks: what a worker keeps of an event awaiting its store
// acknowledges it, and asks for it again after the first backoff, as the
// message itself would, on a real consumer whose AckWait is far longer.
func TestPendingAcks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ACKS", Subjects: []string{"acks.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for range n {
		if _, err := js.Publish(ctx, "acks.x", []byte("event")); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var acks []pendingAck
	for m := range batch.Messages() {
		acks = append(acks, pendingAckOf(m))
	}
	if len(acks) != n {
		t.Fatalf("fetched %d events, want %d", len(acks), n)
	}
	ackAll(ctx, nc, slog.New(slog.DiscardHandler), acks[:4])
	nakAll(nc, acks[4:])
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The two asked for again come back after backoff(1), long before
	// AckWait; the four acknowledged are no longer pending (below).
	again, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range again.Messages() {
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, md.Sequence.Stream)
		_ = m.Ack()
	}
	if len(seqs) != 2 || seqs[0] != 5 || seqs[1] != 6 {
		t.Fatalf("redelivered stream sequences %v, want [5 6]", seqs)
	}
	// The server takes acknowledgements in the background.
	var info *jetstream.ConsumerInfo
	natstest.WaitFor(t, 5*time.Second, "no event pending or awaiting its acknowledgement", func() bool {
		if info, err = cons.Info(ctx); err != nil {
			t.Fatal(err)
		}
		return info.NumAckPending == 0 && info.NumPending == 0
	})
	if err := pendingAck("").publish(nc, ackBody); err == nil {
		t.Error("an event without a reply subject was acknowledged")
	}
}

// TestStoredEventsAcknowledged: a worker acknowledges each event once a
// stored snapshot covers it, so none waits out AckWait to be delivered
// again (a redelivery is skipped, so only the consumer shows the miss).
func TestStoredEventsAcknowledged(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	r := StartWorker(t, nc, WithAckWait(2*time.Second))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	for conv := range 3 {
		id := fmt.Sprintf("acked-%d", conv)
		for k := range 10 {
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user"}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			if _, err := c.Send(ctx, id, streams.TypeMessageAppended, data); err != nil {
				t.Fatal(err)
			}
		}
		natstest.WaitCaughtUp(t, c, id, 10*time.Second)
	}
	cons, err := r.W.js.Consumer(ctx, r.W.cfg.subjects.EventsStream(), r.W.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.ConsumerInfo
	natstest.WaitFor(t, 5*time.Second, "every event acknowledged", func() bool {
		if info, err = cons.Info(ctx); err != nil {
			t.Fatal(err)
		}
		return info.NumAckPending == 0
	})
	// Past AckWait: an unacknowledged event would have come back by now.
	time.Sleep(2500 * time.Millisecond)
	if info, err = cons.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.Delivered.Consumer != 30 {
		t.Errorf("redelivered %d, delivered %d; want 0 and 30", info.NumRedelivered, info.Delivered.Consumer)
	}
}
