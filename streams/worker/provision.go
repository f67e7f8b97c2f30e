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

// DefaultWatchIdle is how long a consumer on the snapshot bucket lives
// without a subscriber, unless Storage says otherwise: the 5 minutes a
// nats.js watch asks for (a lower limit would refuse it). A watch that
// asks for nothing, as nats.go's, gets it too, where the server would
// otherwise give an ephemeral consumer 5 seconds.
const DefaultWatchIdle = 5 * time.Minute

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
	// Reconcile brings the settings of an existing stream, bucket or
	// consumer that differ from this worker's in line with them: the
	// replicas, limits and duplicate window above, the errors stream's
	// retention, and the consumers' ack wait, max deliver and pinned TTL.
	// Without it a worker that finds them otherwise changes nothing: it
	// waits, not ready, with an error wrapping ErrSettingsDiffer naming
	// them, until they agree (docs/operations.md, "Changing settings").
	Reconcile bool
	// WatchIdle bounds how long a consumer on the snapshot bucket lives
	// without a subscriber: the bucket's stream gives it, as its consumer
	// limits, to every consumer created there that asks for no more, and
	// refuses one that asks for more. A KV watch is such a consumer, and
	// so is a durable made by a UI login given the rights of a KV watch
	// (streams.WithKVWatch), which permissions cannot refuse: it goes
	// after WatchIdle unused. Zero means
	// DefaultWatchIdle, a negative value no limit. A bucket made without
	// the limit gets it; one whose limit differs is a setting that
	// Reconcile changes.
	WatchIdle time.Duration
}

// watchIdle is the snapshot bucket's consumer idle limit; 0 is none.
func (st Storage) watchIdle() time.Duration {
	switch {
	case st.WatchIdle == 0:
		return DefaultWatchIdle
	case st.WatchIdle < 0:
		return 0
	}
	return st.WatchIdle
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
// existing ones whose settings Storage covers (replicas, limits, duplicate
// window) differ, it returns an error wrapping ErrSettingsDiffer, unless
// st.Reconcile: then they are brought in line, and a setting the server
// refuses to change is logged, not fatal. The rest is left as an operator
// tuned it.
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
		// Made by this release: every worker on it knows compaction
		// (checkpoint_compact_mark.go).
		create := want
		create.Metadata = map[string]string{CompactionMetadataKey: EventCompaction{On: true}.String()}
		stream, err = js.CreateStream(ctx, create)
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
		var diffs settingDiffs
		diffs.add("replicas", have.Replicas, want.Replicas)
		diffs.add("max bytes", have.MaxBytes, want.MaxBytes)
		diffs.add("max age", have.MaxAge, want.MaxAge)
		diffs.add("duplicate window", have.Duplicates, want.Duplicates)
		if len(diffs) > 0 && !st.Reconcile {
			return nil, nil, diffs.err("events stream " + want.Name)
		}
		if len(diffs) > 0 {
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
		return nil, nil, fmt.Errorf("worker: events stream %s: %w", want.Name, err)
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
	kv, err := openBucket(ctx, js, bucket, st.Reconcile, log)
	if err == nil {
		err = limitWatches(ctx, js, kv, st.watchIdle(), st.Reconcile, log)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("worker: snapshot bucket %s: %w", bucket.Bucket, err)
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
		return nil, have, fmt.Errorf("worker: events stream %s: add the chunks subjects: %w", want.Name, err)
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
// (another worker may be first). An existing one whose replicas differ
// from cfg's is an error wrapping ErrSettingsDiffer, unless reconcile:
// then they are brought in line (see alignReplicas). The rest of an
// existing bucket's settings are left as an operator tuned them.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, reconcile bool, log *slog.Logger) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		kv, err = createBucket(ctx, js, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	case err == nil:
		err = alignReplicas(ctx, js, kv, cfg.Replicas, reconcile, log)
	}
	return kv, err
}

// createBucket creates the bucket cfg describes as nats.go's
// CreateKeyValue does, but with its stream's DenyDelete off: an erasure
// deletes a key's revisions one by one, securely (eraser.eraseSubject),
// where a purge leaves their bytes on disk. The bucket is an ordinary
// key-value bucket to every client.
func createBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	history := int64(max(cfg.History, 1))
	replicas := max(cfg.Replicas, 1)
	maxBytes, maxValue := cfg.MaxBytes, cfg.MaxValueSize
	if maxBytes == 0 {
		maxBytes = -1
	}
	if maxValue == 0 {
		maxValue = -1
	}
	dup := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < dup {
		dup = cfg.TTL
	}
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: history,
		MaxBytes:          maxBytes,
		MaxAge:            cfg.TTL,
		MaxMsgSize:        maxValue,
		Storage:           cfg.Storage,
		Replicas:          replicas,
		Placement:         cfg.Placement,
		AllowRollup:       true,
		Duplicates:        dup,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		AllowDirect:       true,
		Discard:           jetstream.DiscardNew,
	})
	if err != nil {
		return nil, err
	}
	return js.KeyValue(ctx, cfg.Bucket)
}

// alignReplicas brings the replicas of an existing bucket to replicas
// when reconcile (a change the server refuses is logged, not fatal), and
// otherwise returns an error wrapping ErrSettingsDiffer when they differ.
func alignReplicas(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, replicas int, reconcile bool, log *slog.Logger) error {
	status, err := kv.Status(ctx)
	if err != nil {
		return nil // the bucket is read and written as it is
	}
	info, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok || info.StreamInfo().Config.Replicas == replicas {
		return nil
	}
	cfg := info.StreamInfo().Config
	if !reconcile {
		var diffs settingDiffs
		diffs.add("replicas", cfg.Replicas, replicas)
		return diffs.err("bucket " + kv.Bucket())
	}
	cfg.Replicas = replicas
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		log.WarnContext(ctx, "bucket replicas not changed", "bucket", kv.Bucket(), "replicas", replicas, "err", err)
	}
	return nil
}
