package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// members counts the workers sharing a partitioned stream: each keeps a
// key in a KV bucket whose TTL forgets a worker that stops renewing it. The
// count only sizes a worker's fair share of partitions; which worker owns a
// partition is the server's pinned-client decision, never this bucket's.
type members struct {
	kv jetstream.KeyValue
	id string
}

// joinMembers creates the bucket when missing and registers this worker.
func joinMembers(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage, ttl time.Duration) (*members, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      s.MembersBucket(),
		Description: "convstream: live workers of a partitioned events stream (keys expire unless renewed)",
		History:     1,
		TTL:         ttl,
		Storage:     jetstream.MemoryStorage,
		Replicas:    max(1, st.BucketReplicas),
		Placement:   st.placement(),
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("streams: members bucket %s: %w", cfg.Bucket, err)
	}
	m := &members{kv: kv, id: nuid.Next()}
	if _, err := m.count(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// count renews this worker's key and returns how many workers are live
// (at least 1: this one).
func (m *members) count(ctx context.Context) (int, error) {
	if _, err := m.kv.PutString(ctx, m.id, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return 1, fmt.Errorf("streams: renew membership: %w", err)
	}
	lister, err := m.kv.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 1, nil
		}
		return 1, fmt.Errorf("streams: list members: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	n := 0
	for range lister.Keys() {
		n++
	}
	return max(1, n), nil
}

// leave removes this worker's key so that the others count it out now
// rather than after the TTL.
func (m *members) leave(ctx context.Context) {
	_ = m.kv.Purge(ctx, m.id)
}
