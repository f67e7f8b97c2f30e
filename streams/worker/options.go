package worker

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/streams"
)

// Option configures a Worker.
type Option func(*config)

type config struct {
	subjects           streams.Subjects
	limits             Limits
	lanes              int
	laneDepth          int
	loads              int
	cacheSize          int
	cacheBytes         int64
	cacheIdle          time.Duration
	cacheTTL           time.Duration
	consumer           string
	storage            Storage
	ackWait            time.Duration
	source             string
	logger             *slog.Logger
	id                 string // WithID; empty: one made by New
	tracerProvider     trace.TracerProvider
	meterProvider      metric.MeterProvider
	pipelines          Pipelines
	inferenceTimeout   time.Duration
	eraseTimeout       time.Duration
	inferenceWait      time.Duration
	inferenceWorkers   int
	inferenceQueue     int
	inferenceQueueWait time.Duration
	inferenceLimits    enginecore.Limits
	pinnedTTL          time.Duration
	snapshotInterval   time.Duration
	snapshotMax        time.Duration
	headsFrom          int64
	storeStall         time.Duration
	checkpoints        bool
	compaction         bool
	compactRatio       float64
	// compactionPoll and compactionSettle replace compactionPoll and
	// CompactionSettle when set (tests).
	compactionPoll, compactionSettle time.Duration
	// deleteSpacing replaces deleteSpacing when set (tests).
	deleteSpacing uint64
	// checkpointsWaiting bounds the checkpoint writes queued for a slot:
	// the constant checkpointsWaiting, lower in tests.
	checkpointsWaiting int

	// The errors stream and dead letters (reports_errorstream.go, reports_deadletter.go).
	errorRetention ErrorRetention
	maxDeliver     int

	// replyIdle is how long a streaming reply may go without a chunk
	// (live.go).
	replyIdle time.Duration
}

func defaultConfig() config {
	s, _ := streams.NewSubjects(streams.DefaultPrefix)
	return config{
		subjects:           s,
		limits:             DefaultLimits(),
		lanes:              DefaultLanes(),
		laneDepth:          64,
		loads:              DefaultLoads,
		cacheSize:          DefaultCacheConversations,
		cacheBytes:         DefaultCacheBytes,
		cacheIdle:          DefaultCacheIdle,
		cacheTTL:           DefaultCacheTTL,
		consumer:           DefaultConsumerName,
		ackWait:            DefaultAckWait,
		source:             "urn:convstream:worker",
		logger:             slog.New(slog.DiscardHandler),
		tracerProvider:     tracenoop.NewTracerProvider(),
		meterProvider:      metricnoop.NewMeterProvider(),
		inferenceTimeout:   DefaultInferenceTimeout,
		inferenceWait:      DefaultInferenceWait,
		eraseTimeout:       DefaultEraseTimeout,
		inferenceWorkers:   DefaultInferenceWorkers(),
		inferenceQueue:     DefaultInferenceQueue,
		inferenceQueueWait: DefaultInferenceQueueWait,
		pinnedTTL:          DefaultPinnedTTL,
		snapshotInterval:   DefaultSnapshotInterval,
		snapshotMax:        DefaultSnapshotMaxInterval,
		headsFrom:          DefaultHeadsConfirmedFrom,
		storeStall:         DefaultStoreStallLimit,
		checkpoints:        DefaultCheckpoints,
		compaction:         DefaultEventCompaction,
		compactRatio:       DefaultCompactRatio,
		checkpointsWaiting: checkpointsWaiting,

		errorRetention: DefaultErrorRetention(),
		maxDeliver:     DefaultMaxDeliver,
		replyIdle:      DefaultReplyIdleTimeout,
	}
}

// configOf returns the configuration opts make over the defaults, or why
// it is not valid.
func configOf(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	err := cfg.validate()
	return cfg, err
}

// CheckOptions returns the error New would return for opts, without
// a connection: a command checks its flags with it before it starts a
// server or connects.
func CheckOptions(opts ...Option) error {
	_, err := configOf(opts)
	return err
}

func (c *config) validate() error {
	if err := c.limits.validate(); err != nil {
		return err
	}
	if c.lanes <= 0 || c.laneDepth <= 0 || c.loads <= 0 || c.cacheSize <= 0 || c.cacheBytes < 0 || c.cacheIdle < 0 || c.cacheTTL < 0 || c.inferenceWorkers <= 0 || c.ackWait <= 0 || c.pinnedTTL < time.Second {
		return fmt.Errorf("%w: lanes, loads, cache size, inference workers and ack wait must be positive, the cache idle time, TTL and bytes not negative, the pinned TTL at least 1s", streams.ErrInvalidConfig)
	}
	if c.inferenceQueue < 0 || c.inferenceQueueWait < 0 {
		return fmt.Errorf("%w: inference queue %d, queue wait %v: want neither negative", streams.ErrInvalidConfig, c.inferenceQueue, c.inferenceQueueWait)
	}
	if err := c.inferenceLimits.Validate(); err != nil {
		return fmt.Errorf("%w: inference limits: %w", streams.ErrInvalidConfig, err)
	}
	if c.eraseTimeout <= 0 {
		return fmt.Errorf("%w: erase timeout %v: want it positive", streams.ErrInvalidConfig, c.eraseTimeout)
	}
	if c.headsFrom < 0 {
		return fmt.Errorf("%w: negative size %d for confirmed heads", streams.ErrInvalidConfig, c.headsFrom)
	}
	if c.storeStall < 0 {
		return fmt.Errorf("%w: negative store stall limit %v", streams.ErrInvalidConfig, c.storeStall)
	}
	if !(c.compactRatio >= 0) || math.IsInf(c.compactRatio, 0) {
		return fmt.Errorf("%w: compaction ratio %v: want it finite and not negative", streams.ErrInvalidConfig, c.compactRatio)
	}
	if c.snapshotInterval < 0 || c.snapshotInterval > c.ackWait/2 || c.snapshotMax < 0 {
		return fmt.Errorf("%w: the snapshot interval must be between 0 and half the ack wait", streams.ErrInvalidConfig)
	}
	// Events wait for a store to be acknowledged: the stretched interval
	// stays within half the ack wait.
	c.snapshotMax = min(c.snapshotMax, c.ackWait/2)
	if err := c.storage.validate(); err != nil {
		return err
	}
	if c.maxDeliver <= 0 {
		return fmt.Errorf("%w: max deliver %d: want at least 1", streams.ErrInvalidConfig, c.maxDeliver)
	}
	if c.consumer == "" || c.source == "" {
		return fmt.Errorf("%w: empty consumer name or source", streams.ErrInvalidConfig)
	}
	// Deltas are written without the SDK (handler_envelope.go), with the source as
	// the SDK would write it.
	source, err := eventSource(c.source)
	if err != nil {
		return err
	}
	c.source = source
	return nil
}

// WithSubjects sets the subject prefix and the stream and bucket names
// derived from it.
func WithSubjects(s streams.Subjects) Option { return func(c *config) { c.subjects = s } }

// WithLimits sets the input limits.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// DefaultLanes returns how many conversations are applied in parallel
// unless WithLanes says otherwise: four for each CPU the process may use.
func DefaultLanes() int { return 4 * runtime.GOMAXPROCS(0) }

// WithLanes sets how many conversations are applied in parallel: events
// of one conversation always go to the same lane, in order.
func WithLanes(n int) Option { return func(c *config) { c.lanes = n } }

// DefaultLoads is how many conversations are loaded from the store at
// once unless WithLoads says otherwise.
const DefaultLoads = 32

// WithLoads bounds how many conversations are loaded from the store at
// once (a new conversation's first event, or the next of one the cache let
// go): each load runs off its lane, whose other conversations go on
// meanwhile, while the loading conversation's events wait for it.
func WithLoads(n int) Option { return func(c *config) { c.loads = n } }

// DefaultCacheConversations is how many conversations are kept in memory
// unless WithCacheConversations says otherwise.
const DefaultCacheConversations = 10_000

// WithCacheConversations bounds how many conversations are kept in memory;
// the least recently used are dropped and rebuilt from JetStream on demand.
// The lanes share the bound (and the byte budget of WithCacheBytes): a lane
// over it drops its own least recently used conversation when that is the
// oldest of all, and otherwise asks the lane holding the oldest to drop
// it; until that lane has, the caches may hold up to 1/32 more.
func WithCacheConversations(n int) Option { return func(c *config) { c.cacheSize = n } }

// DefaultCacheBytes is the memory the cached conversations may take
// unless WithCacheBytes says otherwise.
const DefaultCacheBytes = 1 << 30

// WithCacheBytes bounds the memory the cached conversations take, as
// estimated from their messages' JSON, what every conversation holds, the
// objects held decoded as maps (see conversation.Conversation.Bytes and
// conversation.DecodedFactor) and their flat lists: past it the least
// recently used are stored (when they have unstored events) and let go, as
// WithCacheConversations says; a lane holding only the conversation in use
// keeps it even when over.
// 0 means no byte limit.
func WithCacheBytes(n int64) Option { return func(c *config) { c.cacheBytes = n } }

// DefaultCacheIdle is how long a cached conversation goes without events
// or reads before it is compacted, unless WithCacheIdle says otherwise.
const DefaultCacheIdle = time.Minute

// WithCacheIdle sets how long a cached conversation goes unused before it
// is compacted: it keeps its messages and its last flat list, and lets go
// of the index and the walk state that make the next append cheap (see
// conversation.Conversation.Compact). The next event rebuilds them, at
// about the cost of parsing the conversation once. Compacted conversations
// hold about half the heap objects, so the garbage collector's marking,
// which grows with the cache and takes CPU from the lanes, is shorter.
// 0 keeps every cached conversation as it is.
func WithCacheIdle(d time.Duration) Option { return func(c *config) { c.cacheIdle = d } }

// DefaultCacheTTL is how long a cached conversation goes without events or
// reads before it is let go, unless WithCacheTTL says otherwise.
const DefaultCacheTTL = 30 * time.Minute

// WithCacheTTL sets how long a cached conversation goes unused before it
// is let go, as if evicted for room, with its checkpoint written (in the
// background) when it has changed since the last one; its next event or
// read rebuilds it from there. A sweep lets go of at most 512 a lane; the
// next goes on. Compacted conversations still cost memory and the garbage
// collector's marking in proportion to their messages: after a burst of
// conversations, this returns a worker to what the conversations still in
// use need, without waiting for the cache to fill. 0 keeps conversations
// until the cache needs their room.
func WithCacheTTL(d time.Duration) Option { return func(c *config) { c.cacheTTL = d } }

// DefaultConsumerName names the durable consumer of the events stream
// unless WithConsumerName says otherwise.
const DefaultConsumerName = "convstream-worker"

// WithConsumerName names the durable consumer of the events stream. Workers
// sharing a name share the work.
func WithConsumerName(name string) Option { return func(c *config) { c.consumer = name } }

// WithStorage configures the events stream and the snapshot bucket; see
// Provision.
func WithStorage(st Storage) Option { return func(c *config) { c.storage = st } }

// WithAckWait sets how long JetStream waits for an acknowledgement before
// redelivering an event (default DefaultAckWait): how long a dead worker's
// events wait for another. The worker reports the events it holds in
// progress every quarter of it, so a live worker's are not redelivered.
func WithAckWait(d time.Duration) Option { return func(c *config) { c.ackWait = d } }

// WithSource sets the CloudEvents source of what the worker publishes.
func WithSource(s string) Option { return func(c *config) { c.source = s } }

// WithID names the worker: in the members bucket of a partitioned stream
// and, as attribute worker_id, on every log line, which the logger given to
// WithLogger then carries already (a program adds it to its own lines
// too). By default New makes a unique id and adds the attribute itself.
func WithID(id string) Option { return func(c *config) { c.id = id } }

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithTracerProvider sets where spans go; by default nowhere.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp != nil {
			c.tracerProvider = tp
		}
	}
}

// WithMeterProvider sets where metrics go; by default nowhere.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp != nil {
			c.meterProvider = mp
		}
	}
}

// WithPipelines enables inference: requests are answered with the engines
// p builds. Without it the worker serves no inference endpoint.
func WithPipelines(p Pipelines) Option { return func(c *config) { c.pipelines = p } }

// DefaultInferenceTimeout bounds one pipeline run unless
// WithInferenceTimeout says otherwise.
const DefaultInferenceTimeout = 30 * time.Second

// WithInferenceTimeout bounds one pipeline run.
func WithInferenceTimeout(d time.Duration) Option { return func(c *config) { c.inferenceTimeout = d } }

// DefaultInferenceWait is how long an inference request waits for the
// events stored before it unless WithInferenceWait says otherwise.
const DefaultInferenceWait = 2 * time.Second

// WithInferenceWait bounds how long an inference request waits for events
// stored before it to be applied (read-your-writes); after that it runs on
// the state at hand.
func WithInferenceWait(d time.Duration) Option { return func(c *config) { c.inferenceWait = d } }

// WithInferenceWorkers bounds how many inference and doctor requests run
// at once, each on a goroutine of its own (default
// DefaultInferenceWorkers()). Events are applied on the lanes whatever
// the requests do.
func WithInferenceWorkers(n int) Option { return func(c *config) { c.inferenceWorkers = n } }

// WithInferenceQueue bounds how many requests may wait for a free worker
// (default DefaultInferenceQueue; 0: none waits). A request past it is
// refused at once with code busy and a retry hint.
func WithInferenceQueue(n int) Option { return func(c *config) { c.inferenceQueue = n } }

// WithInferenceQueueWait bounds how long a request waits for a free
// worker (default DefaultInferenceQueueWait); it is refused busy then.
func WithInferenceQueueWait(d time.Duration) Option {
	return func(c *config) { c.inferenceQueueWait = d }
}

// WithInferenceLimits bounds every pipeline run (see enginecore.Limits):
// they are given to the engines the Pipelines build, and a spec may only
// tighten them. Zero fields keep the defaults.
func WithInferenceLimits(l enginecore.Limits) Option {
	return func(c *config) { c.inferenceLimits = l }
}

// WithPinnedTTL sets, on a partitioned stream, how long a worker keeps a
// partition without asking for events (so, how long a dead worker's
// partitions wait before another worker takes them) and how long a
// worker's membership lasts without renewal. At least 1s; the same on
// every worker.
func WithPinnedTTL(d time.Duration) Option { return func(c *config) { c.pinnedTTL = d } }

// WithSnapshotInterval sets how often, at most, the full snapshot of a
// conversation is written to the snapshot bucket (default 50ms): changes
// within the interval are stored together, and the last one is always
// stored. A write is put off by up to half the interval, so that those of
// conversations due close together go out together: the bucket is at most
// one and a half intervals behind. Every applied event still publishes its
// delta at once. 0 stores after every event.
func WithSnapshotInterval(d time.Duration) Option { return func(c *config) { c.snapshotInterval = d } }

// DefaultSnapshotMaxInterval is how far the snapshot interval stretches
// under load unless WithSnapshotMaxInterval says otherwise.
const DefaultSnapshotMaxInterval = time.Second

// WithSnapshotMaxInterval sets how far the snapshot interval may stretch
// while the bucket falls behind (default 1s): when more writes are in
// flight than the worker aims for, the interval grows in proportion, so a
// busy worker writes each conversation's full snapshot less often instead
// of spending itself on writes. A value at or below the snapshot interval
// keeps the interval fixed; more than half the ack wait counts as half
// the ack wait. A follower resyncing from the bucket is at most this far
// behind the deltas.
func WithSnapshotMaxInterval(d time.Duration) Option { return func(c *config) { c.snapshotMax = d } }

// WithHeadsConfirmedFrom sets the mean size, in bytes, of the snapshots a
// worker reads from a replicated bucket from which it reads their heads
// confirmed: a direct get from any replica, then a question to the leader
// for the key's first value after it. Below it heads are read from the
// leader (default DefaultHeadsConfirmedFrom, measured on loopback). A
// network whose round trips cost more than its bytes wants a higher
// value, one whose bytes cost more a lower one; 0 reads every head
// confirmed, a size no snapshot reaches (1TiB) none. A bucket of one
// replica is read with direct gets whatever it says.
func WithHeadsConfirmedFrom(n int64) Option { return func(c *config) { c.headsFrom = n } }

// WithStoreStallLimit sets how long snapshot writes may all fail, none
// succeeding, before Ready reports the worker not ready (default
// DefaultStoreStallLimit; 0: never). Failed writes are retried and their
// events stay unacknowledged meanwhile, so nothing is lost; the readiness
// probe tells the operator, and holds a rollout, while the bucket cannot
// be written (a server out of disk, a store directory gone).
func WithStoreStallLimit(d time.Duration) Option { return func(c *config) { c.storeStall = d } }

// DefaultCheckpoints is whether conversation checkpoints are written
// unless WithCheckpoints says otherwise.
const DefaultCheckpoints = true

// WithCheckpoints turns conversation checkpoints on (the default) or off.
// With them a worker writes a conversation's messages to the checkpoint
// bucket (Subjects.CheckpointBucket) when it lets go of it (an eviction,
// a hand-off, a graceful stop) or compacts it (WithCacheIdle) after enough
// change, or while it stays busy after much more, and the next rebuild
// starts there and replays only the later events. Off, every rebuild
// replays the conversation from its first event, and the worker needs no
// right to the bucket.
func WithCheckpoints(on bool) Option { return func(c *config) { c.checkpoints = on } }

// WithEventCompaction turns compaction of the events stream on (the default,
// DefaultEventCompaction) or off. On, once a conversation's checkpoint is
// written at a stream sequence, its events up to that sequence are purged
// from the events stream, which then holds only what conversations
// changed since their last checkpoints; a rebuild starts from the
// checkpoint (see checkpoint_compact.go). It takes effect with checkpoints on
// (WithCheckpoints); a stream once compacted needs them to rebuild its
// conversations, and turning checkpoints off then loses the purged events.
func WithEventCompaction(on bool) Option { return func(c *config) { c.compaction = on } }

// WithCompactRatio sets how much a busy conversation's events may add up
// to, as a multiple of what it holds, before it is checkpointed and so
// compacted (DefaultCompactRatio; see checkpoint_compact.go): the events
// stream then holds about 1+ratio times what busy conversations hold.
// Lower costs more checkpoints; 0 leaves busy conversations to the
// checkpoint rule that bounds their rebuilds alone. It takes effect with
// compaction on (WithEventCompaction).
func WithCompactRatio(ratio float64) Option { return func(c *config) { c.compactRatio = ratio } }
