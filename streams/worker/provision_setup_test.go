package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTransientJetStream sorts setup errors into those a forming cluster
// gives for a while and those that stay.
func TestTransientJetStream(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("worker: events stream X: %w", nats.ErrTimeout), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 500, ErrorCode: 10005, Description: "no suitable peers for placement"}), true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use"}, false},
		{nats.ErrNoResponders, false},
		{streams.ErrInvalidConfig, false},
		{errors.New("other"), false},
	} {
		if got := transientJetStream(c.err); got != c.want {
			t.Errorf("transientJetStream(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestUntilAvailable retries a setup call while it fails transiently,
// returns a lasting failure at once, and gives up when its context ends.
func TestUntilAvailable(t *testing.T) {
	w := &Worker{cfg: defaultConfig()}
	ctx := context.Background()
	calls := 0
	err := w.untilAvailable(ctx, "test", func() error {
		if calls++; calls < 3 {
			return &jetstream.APIError{Code: 503, ErrorCode: 10008}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("transient twice: err %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err = w.untilAvailable(ctx, "test", func() error { calls++; return streams.ErrInvalidConfig })
	if !errors.Is(err, streams.ErrInvalidConfig) || calls != 1 {
		t.Errorf("lasting failure: err %v after %d calls, want ErrInvalidConfig after 1", err, calls)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = w.untilAvailable(short, "test", func() error { return nats.ErrTimeout })
	if !errors.Is(err, nats.ErrTimeout) || time.Since(start) > 10*time.Second {
		t.Errorf("context ended: err %v after %v, want the last error once the 300ms context ended, not after more retries", err, time.Since(start))
	}
}
