package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long JetStream remembers event ids (Nats-Msg-Id)
// to drop republished copies.
const DuplicateWindow = 2 * time.Minute

// Provision creates the events stream and the snapshot bucket named by s if
// they are missing, and returns them. Existing ones are used as they are, so
// an operator may tune them (replicas, limits, placement).
func Provision(ctx context.Context, js jetstream.JetStream, s Subjects, replicas int) (jetstream.Stream, jetstream.KeyValue, error) {
	if replicas <= 0 {
		replicas = 1
	}
	stream, err := js.Stream(ctx, s.EventsStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        s.EventsStream(),
			Description: "convstream message events: the source of truth of every conversation",
			Subjects:    []string{s.AllEvents()},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
			Duplicates:  DuplicateWindow,
			AllowDirect: true,
			Discard:     jetstream.DiscardOld,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another worker created it in the meantime.
			stream, err = js.Stream(ctx, s.EventsStream())
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("streams: events stream %s: %w", s.EventsStream(), err)
	}
	kv, err := js.KeyValue(ctx, s.SnapshotBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      s.SnapshotBucket(),
			Description: "convstream: the latest snapshot of every conversation, by conversation id",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, s.SnapshotBucket())
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("streams: snapshot bucket %s: %w", s.SnapshotBucket(), err)
	}
	return stream, kv, nil
}
