package worker

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// errCodeMaxAckPendingExcess is the JetStream API error a consumer whose
// MaxAckPending is over a limit of the server, the account or the stream
// gets (nats-server's JSConsumerMaxPendingAckExcessErrF). Its description
// ends in the limit.
const errCodeMaxAckPendingExcess jetstream.ErrorCode = 10121

// createConsumer creates or updates the consumer of cfg on s. An existing
// consumer whose ack wait, max deliver or pinned TTL differ from cfg's is
// left as it is, with an error wrapping ErrSettingsDiffer, unless
// Storage.Reconcile (see consumerSettings). When a limit of the server,
// the account or the stream is below the MaxAckPending the worker asks
// for, it takes the limit, with a warning, rather than not starting: fewer
// events awaiting a store bound its throughput under load (see
// pendingStores), and lose nothing.
func (w *Worker) createConsumer(ctx context.Context, s jetstream.Stream, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	have, err := s.Consumer(ctx, cfg.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, err
	default:
		if cfg, err = consumerSettings(have.CachedInfo().Config, cfg, w.cfg.storage.Reconcile); err != nil {
			return nil, err
		}
	}
	c, err := s.CreateOrUpdateConsumer(ctx, cfg)
	limit, ok := maxAckPendingLimit(err)
	if !ok || limit >= cfg.MaxAckPending {
		return c, err
	}
	w.cfg.logger.WarnContext(ctx, "consumer MaxAckPending lowered to a JetStream limit: fewer events can await a snapshot store",
		"consumer", cfg.Durable, "wanted", cfg.MaxAckPending, "limit", limit)
	cfg.MaxAckPending = limit
	return s.CreateOrUpdateConsumer(ctx, cfg)
}

// consumerSettings returns the configuration to update an existing
// consumer, have, to: want's, but for its MaxAckPending, never lowered
// (it follows a worker's lanes, which differ across a fleet: see
// maxAckPending). Without reconcile, an ack wait, max deliver or pinned
// TTL of have's that differs from want's is an error wrapping
// ErrSettingsDiffer naming them: workers started with other settings
// rewrote them in turn, each as it started.
func consumerSettings(have, want jetstream.ConsumerConfig, reconcile bool) (jetstream.ConsumerConfig, error) {
	want.MaxAckPending = max(want.MaxAckPending, have.MaxAckPending)
	if reconcile {
		return want, nil
	}
	var diffs settingDiffs
	diffs.add("ack wait", have.AckWait, want.AckWait)
	diffs.add("max deliver", have.MaxDeliver, want.MaxDeliver)
	diffs.add("pinned TTL", have.PinnedTTL, want.PinnedTTL)
	return want, diffs.err("consumer " + want.Durable)
}

// jsConsumerStoreFailed is the JetStream API error code of a consumer
// whose store the server could not create or load
// (JSConsumerStoreFailedErrF, "error creating store for consumer").
const jsConsumerStoreFailed jetstream.ErrorCode = 10012

// consumerDamaged reports whether err says the server could not load a
// consumer's state: its files were damaged while the server was down.
// Deleting the consumer does not help (the server never loaded it, and
// creating it again meets the same files), so the worker waits, not
// ready and saying why, until an operator removes them (untilAvailable,
// TestDamagedConsumerState); every start failed before, a crash loop.
func consumerDamaged(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsConsumerStoreFailed
}

// maxAckPendingLimit returns the limit an errCodeMaxAckPendingExcess error
// names.
func maxAckPendingLimit(err error) (int, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeMaxAckPendingExcess {
		return 0, false
	}
	i := strings.LastIndexByte(apiErr.Description, ' ')
	limit, err := strconv.Atoi(apiErr.Description[i+1:])
	if err != nil || limit <= 0 {
		return 0, false
	}
	return limit, true
}
