package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestConsumerTakesAJetStreamLimit: a stream whose consumer limits cap
// MaxAckPending below what the worker asks for gets a worker that starts
// with the limit and applies events, rather than one that does not start,
// on one shared consumer and on a partition's each.
func TestConsumerTakesAJetStreamLimit(t *testing.T) {
	for _, partitions := range []int{0, 2} {
		t.Run(fmt.Sprintf("partitions=%d", partitions), func(t *testing.T) {
			ctx := context.Background()
			nc := natstest.Connect(t, natstest.StartServer(t, t.TempDir()))
			opts := []Option{WithStorage(Storage{Partitions: partitions})}
			w, err := New(nc, opts...)
			if err != nil {
				t.Fatal(err)
			}
			stream, _, err := Provision(ctx, w.js, w.cfg.subjects, w.cfg.storage, nil)
			if err != nil {
				t.Fatal(err)
			}
			const limit = 20000
			cfg := stream.CachedInfo().Config
			cfg.ConsumerLimits.MaxAckPending = limit
			if _, err := w.js.UpdateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if limit >= w.consumerConfig().MaxAckPending {
				t.Fatalf("the worker asks for %d, not over the limit", w.consumerConfig().MaxAckPending)
			}

			r := StartWorker(t, nc, opts...)
			names := []string{r.W.cfg.consumer}
			if partitions > 0 {
				names = nil
				for p := range partitions {
					names = append(names, r.W.cfg.partitionConsumer(p))
				}
			}
			for _, name := range names {
				cons, err := r.W.stream.Consumer(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				if got := cons.CachedInfo().Config.MaxAckPending; got != limit {
					t.Errorf("consumer %s: MaxAckPending %d, want the stream's limit %d", name, got, limit)
				}
			}
			c := natstest.NewClient(t, nc)
			if _, err := c.Send(ctx, "limited", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, 20*time.Second, "the event applied", func() bool {
				s, err := c.Snapshot(ctx, "limited")
				return err == nil && len(s.FlatList) > 0
			})
		})
	}
}

// TestMaxAckPendingLimitReadsTheServersError: only the error naming the
// limit gives one.
func TestMaxAckPendingLimitReadsTheServersError(t *testing.T) {
	if _, ok := maxAckPendingLimit(nil); ok {
		t.Error("a limit from no error")
	}
	if _, ok := maxAckPendingLimit(context.Canceled); ok {
		t.Error("a limit from another error")
	}
}
