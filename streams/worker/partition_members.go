package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// members counts the workers sharing a partitioned stream: each keeps a
// key in a KV bucket whose TTL forgets a worker that stops renewing it. The
// list sizes a worker's fair share of partitions and says which partitions
// it prefers; which worker owns a partition is the server's pinned-client
// decision, never this bucket's.
type members struct {
	kv jetstream.KeyValue
	id string
}

// joinMembers creates the bucket when missing and registers this worker
// under id.
func joinMembers(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage, ttl time.Duration, id string) (*members, error) {
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
		return nil, fmt.Errorf("worker: members bucket %s: %w", cfg.Bucket, err)
	}
	m := &members{kv: kv, id: id}
	if _, err := m.count(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// count renews this worker's key and returns how many workers are live
// (at least 1: this one).
func (m *members) count(ctx context.Context) (int, error) {
	ids, err := m.list(ctx)
	return len(ids), err
}

// list renews this worker's key and returns the ids of the live workers,
// in the order of their memberRank, this one among them (alone when the
// bucket cannot be read).
func (m *members) list(ctx context.Context) ([]string, error) {
	alone := []string{m.id}
	if _, err := m.kv.PutString(ctx, m.id, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return alone, fmt.Errorf("worker: renew membership: %w", err)
	}
	lister, err := m.kv.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return alone, nil
		}
		return alone, fmt.Errorf("worker: list members: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var ids []string
	for id := range lister.Keys() {
		ids = append(ids, id)
	}
	if !slices.Contains(ids, m.id) {
		ids = append(ids, m.id)
	}
	// Ordered by a hash of the id, which every worker computes alike: ids
	// made in one process share a prefix and count up, and in their own
	// order the workers started first would always come first.
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(cmp.Compare(memberRank(a), memberRank(b)), cmp.Compare(a, b))
	})
	return ids, nil
}

// memberRank is the FNV-1a hash of a member id, which orders the members.
func memberRank(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// preferred reports whether partition p of a stream is this worker's by
// preference among the live workers ids (sorted, as list returns them):
// partitions go to the workers in turn, so that every worker present
// takes its share at once, with no hand-off, and the workers agree on
// who takes which.
func (m *members) preferred(p int, ids []string) bool {
	return p%len(ids) == slices.Index(ids, m.id)
}

// leave removes this worker's key so that the others count it out now
// rather than after the TTL.
func (m *members) leave(ctx context.Context) {
	_ = m.kv.Purge(ctx, m.id)
}
