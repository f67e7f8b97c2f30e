package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/nats-io/nats.go/jetstream"
)

// deadLetterOf returns the one dead-letter record stored for conv.
func deadLetterOf(t testing.TB, c *client.Client, conv string) EventDeadLettered {
	t.Helper()
	got := waitErrors(t, c, conv, 1, 30*time.Second)
	if len(got) != 1 || got[0].Event.Type() != streams.TypeEventDeadLettered {
		t.Fatalf("stored reports of %s: %d, first %s; want one %s", conv, len(got), got[0].Event.Type(), streams.TypeEventDeadLettered)
	}
	natstest.CheckEvent(t, got[0].Event)
	var dl EventDeadLettered
	if err := json.Unmarshal(got[0].Event.Data(), &dl); err != nil {
		t.Fatal(err)
	}
	return dl
}

// TestDeadLetterAfterMaxDeliveries makes every delivery of an event fail
// for a reason that might pass (the snapshot bucket is gone, so the
// conversation cannot be loaded) and requires, after WithMaxDeliver
// deliveries, a convstream.event.deadlettered.v1 on the conversation's
// errors subject naming the event, its deliveries and the failure, and no
// more deliveries. Before, the consumer's MaxDeliver was unlimited and the
// event was redelivered forever, with nothing stored.
func TestDeadLetterAfterMaxDeliveries(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithMaxDeliver(3))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	if err := c.JetStream().DeleteStream(ctx, "KV_"+c.Subjects().SnapshotBucket()); err != nil {
		t.Fatal(err)
	}
	const conv = "doomed"
	sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}, client.WithEventID("doomed-1"))
	if err != nil {
		t.Fatal(err)
	}
	dl := deadLetterOf(t, c, conv)
	if dl.Sequence != sent.Sequence || dl.EventID == nil || *dl.EventID != "doomed-1" || dl.Deliveries != 3 ||
		dl.ConversationID != conv || dl.Type != streams.TypeMessageAppended || dl.Consumer != r.W.cfg.consumer || dl.Reason == "" || dl.Reason == unsettledReason {
		t.Errorf("dead letter %+v, want event doomed-1 at %d after 3 deliveries with its failure", dl, sent.Sequence)
	}
	t.Logf("reason: %s", dl.Reason)
	// JetStream delivers it no more.
	cons, err := c.JetStream().Consumer(ctx, c.Subjects().EventsStream(), r.W.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 10*time.Second, "the event to leave the consumer's pending", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumRedelivered == 0 && info.NumPending == 0
	})
	if info, _ := cons.Info(ctx); info.Config.MaxDeliver != 3 {
		t.Errorf("consumer MaxDeliver %d, want 3", info.Config.MaxDeliver)
	}
}

// TestDeadLetterAnnounced covers an event whose last delivery nobody
// settled (the worker holding it died): JetStream announces that it gave
// up on it (the MAX_DELIVERIES advisory), and a running worker stores the
// dead letter, naming the event it reads back from the stream. Before,
// nobody listened to the advisory and the event was dropped silently.
func TestDeadLetterAnnounced(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	w := provisionedWorker(t, nc, WithMaxDeliver(1), WithAckWait(time.Second))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	// A worker that takes the event on its only delivery and dies with it.
	cons, err := w.createConsumer(ctx, w.stream, w.consumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	const conv = "orphan"
	sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}, client.WithEventID("orphan-1"))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range batch.Messages() {
	}
	if batch.Error() != nil {
		t.Fatal(batch.Error())
	}

	// The next worker pulls; JetStream gives the event up after the ack
	// wait and says so.
	StartWorker(t, nc, WithMaxDeliver(1), WithAckWait(time.Second))
	dl := deadLetterOf(t, c, conv)
	if dl.Sequence != sent.Sequence || dl.EventID == nil || *dl.EventID != "orphan-1" || dl.Deliveries != 1 ||
		dl.ConversationID != conv || dl.Type != streams.TypeMessageAppended || dl.Subject != c.Subjects().Events(conv) ||
		!strings.Contains(dl.Reason, "not settled") {
		t.Errorf("dead letter %+v, want event orphan-1 at %d after 1 delivery, unsettled", dl, sent.Sequence)
	}
}
