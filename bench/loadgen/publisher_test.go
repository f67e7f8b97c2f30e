package loadgen

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// TestUnacknowledgedPublishes runs the load against subjects whose
// publishes are never acknowledged (a subscriber takes them, nothing
// stores them) and against a stream that refuses them: the run must end
// with ErrNotAcknowledged instead of waiting for room among the pending
// acknowledgements for ever, as it did when a server lost its storage
// under it.
func TestUnacknowledgedPublishes(t *testing.T) {
	conn := embeddedServer(t)
	subjects, err := streams.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	pub, sub := conn(), conn()
	ctx := context.Background()
	run := func(name string, cfg Config) (time.Duration, error) {
		t.Helper()
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := Worker(ctx, pub, sub, subjects, name, cfg)
			done <- err
		}()
		select {
		case err := <-done:
			return time.Since(start), err
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the run did not end within 30 s", name)
			return 0, nil
		}
	}

	// Taken, never acknowledged: more events than may be pending.
	swallow, err := sub.Subscribe(subjects.AllEvents(), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	took, err := run("lost", Config{Conversations: 10, Events: maxPending + 500, ContentBytes: 16, Wait: time.Second})
	if !errors.Is(err, ErrNotAcknowledged) {
		t.Errorf("unacknowledged publishes: err %v, want ErrNotAcknowledged", err)
	}
	t.Logf("unacknowledged: %v after %v", err, took)
	if err := swallow.Unsubscribe(); err != nil {
		t.Fatal(err)
	}

	// Refused: the stream takes ten and no more.
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FULL", Subjects: []string{subjects.AllEvents()},
		MaxMsgs: 10, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	took, err = run("refused", Config{Conversations: 10, Events: 200, ContentBytes: 16, Wait: 20 * time.Second})
	if !errors.Is(err, ErrNotAcknowledged) {
		t.Errorf("refused publishes: err %v, want ErrNotAcknowledged", err)
	}
	if took > 10*time.Second {
		t.Errorf("refused publishes: the run took %v; the refusals were known at once", took)
	}
	t.Logf("refused: %v after %v", err, took)
}
