package streams

import (
	"context"
	"testing"
	"time"
)

// TestConsumerTakesAJetStreamLimit: a stream whose consumer limits cap
// MaxAckPending below what the worker asks for gets a worker that starts
// with the limit and applies events, rather than one that does not start.
func TestConsumerTakesAJetStreamLimit(t *testing.T) {
	ctx := context.Background()
	nc := connect(t, startServer(t, t.TempDir()))
	w := provisionedWorker(t, nc)
	const limit = 20000
	cfg := w.stream.CachedInfo().Config
	cfg.ConsumerLimits.MaxAckPending = limit
	if _, err := w.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if limit >= w.consumerConfig().MaxAckPending {
		t.Fatalf("the worker asks for %d, not over the limit", w.consumerConfig().MaxAckPending)
	}

	r := startWorker(t, nc)
	cons, err := r.w.stream.Consumer(ctx, r.w.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.MaxAckPending; got != limit {
		t.Errorf("consumer MaxAckPending %d, want the stream's limit %d", got, limit)
	}
	c := newClient(t, nc)
	if _, err := c.Send(ctx, "limited", TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the event applied", func() bool {
		s, err := c.Snapshot(ctx, "limited")
		return err == nil && len(s.FlatList) > 0
	})
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
