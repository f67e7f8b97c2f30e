package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// setupRetryMax is the longest wait between two tries of a setup call.
const setupRetryMax = 5 * time.Second

// untilAvailable runs a setup call (creating or binding the stream, the
// buckets, the consumers) until it succeeds, fails for good, or ctx ends.
// A JetStream cluster still electing its leaders (one just formed, or one
// a node just left) times out or answers "temporarily unavailable" for a
// while; a worker starting then waits for it, and says so, rather than
// exit.
func (w *Worker) untilAvailable(ctx context.Context, what string, call func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := call()
		damaged := consumerDamaged(err)
		differ := errors.Is(err, ErrSettingsDiffer)
		if err == nil || !transientJetStream(err) && !damaged && !differ || ctx.Err() != nil {
			w.waiting.Store(nil)
			return err
		}
		cause := fmt.Errorf("%s: %w", what, err)
		switch {
		case differ:
			w.cfg.logger.ErrorContext(ctx, "settings differ from the server's; not changing them, will check again", "setup", what,
				"retry_in", delay, "err", err)
		case damaged:
			cause = fmt.Errorf("%s: its state on the server is damaged; remove its directory (obs/<consumer> under the events stream's in the server's store) or restore it: %w", what, err)
			w.metrics.storageDamaged(ctx, "consumer")
			w.cfg.logger.ErrorContext(ctx, "consumer state damaged on the server; will retry", "setup", what, "retry_in", delay, "err", cause)
		default:
			w.cfg.logger.WarnContext(ctx, "JetStream not available yet; will retry", "setup", what, "retry_in", delay, "err", err)
		}
		w.waiting.Store(&cause)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		delay = min(2*delay, setupRetryMax)
	}
}

// transientJetStream reports whether err is one a JetStream cluster gives
// while it elects leaders or waits for peers: a request timeout, or an API
// error saying so. (No responders is not: a server without JetStream
// gives it, for good.)
func transientJetStream(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return true
	}
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case 10005, // no suitable peers for placement
		10006, // JetStream not in clustered mode yet
		10008, // JetStream system temporarily unavailable
		10009, // not the leader
		10023: // insufficient resources
		return true
	}
	return api.Code == 503 || api.Code == 408
}
