package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// limitWatches gives the snapshot bucket's stream the consumer idle limit
// idle (0: none; Storage.WatchIdle). A bucket without one gets it: it only
// bounds consumers made from then on, and an older worker ignores it. One
// whose limit differs is an error wrapping ErrSettingsDiffer, unless
// reconcile. A change the server refuses (a consumer there already asks
// for more) is logged, not fatal: the bucket is read and written as it is.
func limitWatches(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, idle time.Duration, reconcile bool, log *slog.Logger) error {
	status, err := kv.Status(ctx)
	if err != nil {
		return nil
	}
	info, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return nil
	}
	cfg := info.StreamInfo().Config
	have := cfg.ConsumerLimits.InactiveThreshold
	if have == idle {
		return nil
	}
	if have != 0 && !reconcile {
		var diffs settingDiffs
		diffs.add("watch idle limit", have, idle)
		return diffs.err("bucket " + kv.Bucket())
	}
	cfg.ConsumerLimits.InactiveThreshold = idle
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		log.WarnContext(ctx, "bucket watch idle limit not changed", "bucket", kv.Bucket(), "watch_idle", idle, "err", err)
		return nil
	}
	log.InfoContext(ctx, "bucket watch idle limit changed", "bucket", kv.Bucket(), "watch_idle", idle, "was", have)
	return nil
}
