package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
)

// TestPullIteratorFindsALostPull checks what pullIterator keeps of the
// iterator's heartbeat check: a pull request the server does not hold
// while the client counts on it is found, and asked again, even though
// the Next right after a message gives up after nextWait (the check lives
// within one Next, and only a wait of two heartbeats finds the loss).
// The server drops the iterator's pulls silently while another client
// holds the consumer's only waiting slot (MaxWaiting 1: nats-server
// answers no 409 to a request with heartbeats); once that client's pull
// has expired, every message published must still arrive, the first one
// before and the rest after a bounded Next ran out. Bounding every Next
// loses them: the iterator never sees two heartbeats missed, never
// forgets the dropped pull, and never asks again.
func TestPullIteratorFindsALostPull(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOSTPULL", Subjects: []string{"lostpull.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, MaxWaiting: 1})
	if err != nil {
		t.Fatal(err)
	}

	// Another client's pull holds the only waiting slot for 3 s.
	other := natstest.Connect(t, ns)
	ojs, err := jetstream.New(other)
	if err != nil {
		t.Fatal(err)
	}
	ocons, err := ojs.Consumer(ctx, "LOSTPULL", "c")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		batch, err := ocons.Fetch(1, jetstream.FetchMaxWait(3*time.Second), jetstream.FetchHeartbeat(time.Second))
		if err == nil {
			for m := range batch.Messages() {
				err = fmt.Errorf("the other client's pull took %s", m.Subject())
			}
			if err == nil {
				err = batch.Error()
			}
		}
		held <- err
	}()
	natstest.WaitFor(t, 30*time.Second, "the other client's pull to wait", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting == 1
	})

	it, err := cons.Messages(jetstream.PullMaxMessages(16), jetstream.PullExpiry(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	pi := newPullIterator(it)
	got := make(chan jetstream.Msg, 8)
	failed := make(chan error, 1)
	go func() {
		for {
			m, err := pi.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			if err != nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
				failed <- err
				return
			}
			if err == nil {
				_ = m.Ack()
				got <- m
			}
		}
	}()

	if err := <-held; err != nil && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("the other client's pull: %v", err)
	}
	receive := func(subject string) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got:
			if m.Subject() != subject {
				t.Fatalf("received %s, want %s", m.Subject(), subject)
			}
		case err := <-failed:
			t.Fatalf("Next: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not arrive within 30 s: the iterator still counts on a pull the server dropped", subject)
		}
	}
	receive("lostpull.1")
	// The Next after it is bounded and runs out: the one after it waits.
	time.Sleep(3 * nextWait)
	receive("lostpull.2")
	receive("lostpull.3")
}
