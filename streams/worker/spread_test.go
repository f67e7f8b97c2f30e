package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestBacklogSpreads starts 3 workers on a backlog of 6 partitions: each
// ends up owning 2 of them while the backlog drains (each takes the
// partitions it prefers among the workers present, see
// ownership.rebalance), and every conversation ends equal to Parse.
func TestBacklogSpreads(t *testing.T) {
	ns := natstest.StartServer(t, "")
	storage := worker.Storage{Partitions: 6}
	worker.StartWorker(t, natstest.Connect(t, ns), worker.WithStorage(storage)).Stop(t) // the stream and consumers
	c := natstest.NewClient(t, natstest.Connect(t, ns))
	ctx := context.Background()
	const convs, events = 300, 10
	want := map[string]*conversation.Conversation{}
	last := map[string]uint64{}
	futures := map[string]jetstream.PubAckFuture{}
	for k := range events {
		for i := range convs {
			conv := fmt.Sprintf("backlog-%03d", i)
			if want[conv] == nil {
				want[conv] = conversation.NewConversation()
			}
			parent := any(nil)
			if k > 0 {
				parent = fmt.Sprintf("m%d", k-1)
			}
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": []string{"user", "assistant"}[k%2],
				"content": fmt.Sprintf("message %d of %s", k, conv), "parentId": parent}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := want[conv].Append(m); err != nil {
				t.Fatal(err)
			}
			msg, err := c.Message(ctx, c.Subjects().Events(conv), streams.TypeMessageAppended, conv, data)
			if err != nil {
				t.Fatal(err)
			}
			if futures[conv], err = c.JetStream().PublishMsgAsync(msg); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-c.JetStream().PublishAsyncComplete():
		case <-time.After(30 * time.Second):
			t.Fatal("backlog not stored")
		}
		for conv, f := range futures {
			select {
			case ack := <-f.Ok():
				last[conv] = ack.Sequence
			case err := <-f.Err():
				t.Fatal(err)
			}
		}
	}

	logger := natstest.FailureLogger(t, 200)
	workers := make([]*worker.Running, 3)
	for i := range workers {
		workers[i] = worker.StartWorker(t, natstest.Connect(t, ns), worker.WithStorage(storage), worker.WithLogger(logger.With("worker", i)))
	}
	most := 0
	natstest.WaitFor(t, 60*time.Second, "each worker owning 2 partitions", func() bool {
		spread := true
		for _, r := range workers {
			n := len(r.W.OwnedPartitions())
			most = max(most, n)
			spread = spread && n == 2
		}
		return spread
	})
	t.Logf("partitions spread; the most one worker owned meanwhile: %d", most)
	natstest.CheckStoredAt(t, c, want, last, 2*time.Minute)
}
