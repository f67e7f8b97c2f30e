package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
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

// TestConsumerFilters: the unpartitioned consumer of a stream Provision
// made, which holds the events and the chunks and nothing else, has no
// filter (nats-server then looks its next message up by sequence alone);
// one of a stream an operator gave another subject keeps the two filters,
// and the message on that subject is left where it is, neither applied
// nor rejected. Either way events apply.
func TestConsumerFilters(t *testing.T) {
	for _, extra := range []bool{false, true} {
		t.Run(fmt.Sprintf("extra=%v", extra), func(t *testing.T) {
			ctx := context.Background()
			nc := natstest.Connect(t, natstest.StartServer(t, t.TempDir()))
			c := natstest.NewClient(t, nc)
			w := provisionedWorker(t, nc)
			if extra {
				cfg := w.stream.CachedInfo().Config
				cfg.Subjects = append(cfg.Subjects, "operator.>")
				if _, err := c.JetStream().UpdateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
				if _, err := c.JetStream().Publish(ctx, "operator.note", []byte("not an event")); err != nil {
					t.Fatal(err)
				}
			}
			r := StartWorker(t, nc)
			want := map[string]*conversation.Conversation{"filters": conversation.NewConversation()}
			last := map[string]uint64{}
			for i := range 3 {
				last["filters"] = sendChainedAs(t, c, want["filters"], "filters", i, []string{"user", "assistant"}[i%2], "hello").Sequence
			}
			natstest.CheckStoredAt(t, c, want, last, 30*time.Second)
			info, err := r.W.stream.Consumer(ctx, r.W.cfg.consumer)
			if err != nil {
				t.Fatal(err)
			}
			got := info.CachedInfo().Config
			wantFilters := 0
			if extra {
				wantFilters = 2
			}
			if len(got.FilterSubjects) != wantFilters || got.FilterSubject != "" {
				t.Errorf("consumer filters %q %q, want %d", got.FilterSubject, got.FilterSubjects, wantFilters)
			}
			if extra {
				if _, err := r.W.stream.GetLastMsgForSubject(ctx, "operator.note"); err != nil {
					t.Errorf("the operator's message: %v", err)
				}
			}
		})
	}
}
