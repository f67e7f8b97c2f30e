package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
)

// TestPurgeSparesPendingDeliveries: a consumer holds two deliveries
// pending, q (lost on the way, say) and p after it; p's subject is purged
// and a later delivery r acknowledged. Purged as asked, p takes q with it:
// nats-server drops q from the consumer's pending set, and q is never
// redelivered (consumer_purges.go). The purger holds the purge back
// below the consumer's floor, q comes back after AckWait, and the purge
// is made once q and p are acknowledged. Filtered and unfiltered
// consumers alike.
func TestPurgeSparesPendingDeliveries(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		name := "unfiltered"
		if filtered {
			name = "filtered"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			nc := natstest.Connect(t, natstest.StartServer(t, ""))
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PURGES", Subjects: []string{"a.*"}})
			if err != nil {
				t.Fatal(err)
			}
			cfg := jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second}
			if filtered {
				cfg.FilterSubjects = []string{"a.*"}
			}
			cons, err := stream.CreateConsumer(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"a.q", "a.p", "a.r"} {
				if _, err := js.Publish(ctx, s, nil); err != nil {
					t.Fatal(err)
				}
			}
			next := func(want string) jetstream.Msg {
				t.Helper()
				m, err := cons.Next(jetstream.FetchMaxWait(30 * time.Second))
				if err != nil {
					t.Fatalf("waiting for %s: %v", want, err)
				}
				if m.Subject() != want {
					t.Fatalf("delivered %s, want %s", m.Subject(), want)
				}
				return m
			}
			next("a.q")      // pending: its delivery lost on the way
			p := next("a.p") // pending: applied, its acknowledgement deferred

			purges := newPurger(stream, 0, func() []jetstream.Consumer { return []jetstream.Consumer{cons} },
				func(string) int { return 0 }, natstest.TestLogger(t))
			held, err := purges.purge(ctx, "p", "a.p", 3)
			if err != nil || !held {
				t.Fatalf("purge below a floor of 0: held %v, %v; want held", held, err)
			}
			if _, err := stream.GetLastMsgForSubject(ctx, "a.p"); err != nil {
				t.Fatalf("a.p purged past the floor: %v", err)
			}
			if err := next("a.r").DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
			again := next("a.q") // after AckWait
			for _, m := range []jetstream.Msg{again, p} {
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatal(err)
				}
			}
			natstest.WaitFor(t, 30*time.Second, "the held purge made once the floor passed it", func() bool {
				if purges.pay(ctx) != 0 {
					return false
				}
				_, err := stream.GetLastMsgForSubject(ctx, "a.p")
				return errors.Is(err, jetstream.ErrMsgNotFound)
			})
			if _, err := stream.GetLastMsgForSubject(ctx, "a.r"); err != nil {
				t.Errorf("a.r: %v", err)
			}
		})
	}
}
