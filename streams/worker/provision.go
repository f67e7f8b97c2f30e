package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// DuplicateWindow is how long JetStream remembers event ids (Nats-Msg-Id)
// to drop republished copies, unless Storage says otherwise.
const DuplicateWindow = 2 * time.Minute

// Storage configures the events stream and the snapshot bucket. Zero
// values mean: one replica, no limits, the default duplicate window, any
// placement.
type Storage struct {
	StreamReplicas, BucketReplicas int
	// StreamMaxBytes and StreamMaxAge drop the oldest events beyond them.
	// The stream is the source of truth: a conversation whose early events
	// are dropped is rebuilt without them when a worker next loads it.
	StreamMaxBytes  int64
	StreamMaxAge    time.Duration
	DuplicateWindow time.Duration
	// PlacementCluster and PlacementTags place the stream and bucket in a
	// JetStream cluster.
	PlacementCluster string
	PlacementTags    []string
	// Partitions, when positive, spreads conversations over that many
	// partitions: the stream stores P.events.<id> as
	// P.events.<partition>.<id> (a subject transform with
	// {{partition(n,1)}}), and each partition has its own consumer, owned
	// by one worker at a time. It must match across workers and cannot
	// change on an existing stream.
	Partitions int
}

func (st Storage) validate() error {
	if st.StreamReplicas < 0 || st.BucketReplicas < 0 || st.StreamMaxBytes < 0 || st.StreamMaxAge < 0 || st.DuplicateWindow < 0 || st.Partitions < 0 {
		return fmt.Errorf("%w: negative storage setting: %+v", streams.ErrInvalidConfig, st)
	}
	return nil
}

func (st Storage) placement() *jetstream.Placement {
	if st.PlacementCluster == "" && len(st.PlacementTags) == 0 {
		return nil
	}
	return &jetstream.Placement{Cluster: st.PlacementCluster, Tags: st.PlacementTags}
}

// streamConfig is the events stream as Storage describes it.
func (st Storage) streamConfig(s streams.Subjects) jetstream.StreamConfig {
	dup := st.DuplicateWindow
	if dup == 0 {
		dup = DuplicateWindow
	}
	maxBytes := st.StreamMaxBytes
	if maxBytes == 0 {
		maxBytes = -1
	}
	return jetstream.StreamConfig{
		Name:        s.EventsStream(),
		Description: "convstream message events: the source of truth of every conversation",
		Subjects:    []string{s.AllEvents(), s.AllChunks()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(1, st.StreamReplicas),
		Duplicates:  dup,
		MaxBytes:    maxBytes,
		MaxAge:      st.StreamMaxAge,
		AllowDirect: true,
		Discard:     jetstream.DiscardOld,
		Placement:   st.placement(),

		SubjectTransform: s.PartitionTransform(st.Partitions),
	}
}

// Provision makes sure the events stream and the snapshot bucket named by s
// exist as st describes, and returns them. Missing ones are created. On
// existing ones only the settings Storage covers are brought in line
// (replicas, limits, duplicate window); the rest is left as an operator
// tuned it, and a setting the server refuses to change is logged, not
// fatal.
func Provision(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage, log *slog.Logger) (jetstream.Stream, jetstream.KeyValue, error) {
	if err := st.validate(); err != nil {
		return nil, nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want := st.streamConfig(s)
	stream, err := js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		stream, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, want.Name) // another worker was first
		}
	case err == nil:
		have := stream.CachedInfo().Config
		if stream, have, err = addChunks(ctx, js, stream, have, want, s, st.Partitions, log); err != nil {
			return nil, nil, err
		}
		if !sameTransform(have.SubjectTransform, want.SubjectTransform) {
			return nil, nil, fmt.Errorf("%w: events stream %s: partitions %d do not match the stream's subject transform %+v; "+
				"the partition count of a stream cannot change", streams.ErrInvalidConfig, want.Name, st.Partitions, have.SubjectTransform)
		}
		next := have
		next.Replicas, next.MaxBytes, next.MaxAge, next.Duplicates = want.Replicas, want.MaxBytes, want.MaxAge, want.Duplicates
		if next.Replicas != have.Replicas || next.MaxBytes != have.MaxBytes || next.MaxAge != have.MaxAge || next.Duplicates != have.Duplicates {
			if updated, uErr := js.UpdateStream(ctx, next); uErr != nil {
				log.WarnContext(ctx, "events stream settings not changed", "stream", want.Name, "err", uErr)
			} else {
				stream = updated
				log.InfoContext(ctx, "events stream settings changed", "stream", want.Name, "replicas", next.Replicas,
					"max_bytes", next.MaxBytes, "max_age", next.MaxAge, "duplicate_window", next.Duplicates)
			}
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("streams: events stream %s: %w", want.Name, err)
	}
	if want.MaxBytes > 0 || want.MaxAge > 0 {
		log.WarnContext(ctx, "the events stream drops old events; conversations that lose events are rebuilt without them",
			"max_bytes", want.MaxBytes, "max_age", want.MaxAge)
	}

	bucket := jetstream.KeyValueConfig{
		Bucket:      s.SnapshotBucket(),
		Description: "convstream: the latest snapshot of every conversation, by conversation id",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(1, st.BucketReplicas),
		Placement:   st.placement(),
	}
	kv, err := openBucket(ctx, js, bucket, log)
	if err != nil {
		return nil, nil, fmt.Errorf("streams: snapshot bucket %s: %w", bucket.Bucket, err)
	}
	return stream, kv, nil
}

// addChunks brings an events stream made before chunks in line: the
// chunks subjects added, and a partitioned stream's transform replaced by
// one that covers them (events keep their stored subjects).
func addChunks(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, have, want jetstream.StreamConfig,
	s streams.Subjects, partitions int, log *slog.Logger) (jetstream.Stream, jetstream.StreamConfig, error) {
	legacy := partitions > 0 && sameTransform(have.SubjectTransform, s.LegacyPartitionTransform(partitions))
	if slices.Contains(have.Subjects, s.AllChunks()) && !legacy {
		return stream, have, nil
	}
	next := have
	if !slices.Contains(next.Subjects, s.AllChunks()) {
		next.Subjects = append(slices.Clip(next.Subjects), s.AllChunks())
	}
	if legacy {
		next.SubjectTransform = want.SubjectTransform
	}
	updated, err := js.UpdateStream(ctx, next)
	if err != nil {
		return nil, have, fmt.Errorf("streams: events stream %s: add the chunks subjects: %w", want.Name, err)
	}
	log.InfoContext(ctx, "events stream takes reply chunks", "stream", want.Name, "subjects", next.Subjects)
	return updated, updated.CachedInfo().Config, nil
}

// sameTransform reports whether two stream subject transforms are equal
// (both absent counts as equal).
func sameTransform(a, b *jetstream.SubjectTransformConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// openBucket binds the bucket cfg describes, creating it when missing
// (another worker may be first) and bringing an existing one's replicas in
// line with cfg's (see alignReplicas); the rest of an existing bucket's
// settings are left as an operator tuned them.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, log *slog.Logger) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	case err == nil:
		alignReplicas(ctx, js, kv, cfg.Replicas, log)
	}
	return kv, err
}

// alignReplicas brings the replicas of an existing bucket to replicas; a
// change the server refuses is logged, not fatal.
func alignReplicas(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, replicas int, log *slog.Logger) {
	status, err := kv.Status(ctx)
	if err != nil {
		return
	}
	info, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok || info.StreamInfo().Config.Replicas == replicas {
		return
	}
	cfg := info.StreamInfo().Config
	cfg.Replicas = replicas
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		log.WarnContext(ctx, "bucket replicas not changed", "bucket", kv.Bucket(), "replicas", replicas, "err", err)
	}
}
