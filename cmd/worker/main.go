// Command worker runs convstream: it consumes message events from NATS
// JetStream, keeps each conversation's tree up to date, publishes and stores
// snapshots, and answers inference requests with the context pipeline.
//
// With no flags it starts an embedded NATS server with JetStream on
// 127.0.0.1:4222, storing in ./data, and serves /healthz and /readyz on
// 127.0.0.1:8080. --nats-url uses an external NATS instead. Every flag has
// an environment variable, shown by -help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // time zones for SystemDateProvider on hosts without zoneinfo

	// Root certificates for TLS to NATS where the system has none, as in
	// the image make image builds (FROM scratch): used only then.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/buildinfo"
	"github.com/convstream/convstream/internal/cliflags"
	"github.com/convstream/convstream/internal/healthswitch"
	"github.com/convstream/convstream/internal/otelsetup"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if errors.Is(err, errVersion) {
		fmt.Println("worker", buildinfo.Read())
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// errVersion is what run returns for --version: main prints the build's
// version (internal/buildinfo) and exits 0.
var errVersion = errors.New("version requested")

// options are the worker's flags.
type options struct {
	listen, dataDir, httpAddr string
	pprofAddr                 string
	websocket                 string
	websocketOrigins          stringList
	maxPayload                int
	conn                      streams.ConnConfig
	embedded                  embeddedAuth
	prefix, consumer          string
	lanes, loads, cache       int
	cacheBytes                int64
	cacheIdle                 time.Duration
	cacheTTL                  time.Duration
	storage                   worker.Storage
	limits                    worker.Limits
	pipelinesDir              string
	inferenceTimeout, ackWait time.Duration
	eraseTimeout              time.Duration
	inferenceWait             time.Duration
	inferenceWorkers          int
	inferenceQueue            int
	inferenceQueueWait        time.Duration
	inferenceLimits           enginecore.Limits
	shutdownTimeout           time.Duration
	pinnedTTL                 time.Duration
	snapshotInterval          time.Duration
	snapshotMax               time.Duration
	headsFrom                 int64
	storeStall                time.Duration
	checkpoints               bool
	compactEvents             bool
	compactRatio              float64
	logLevel, logFormat       string
	gcPercent                 int
	idleGC                    time.Duration
	memoryLimitRatio          float64
	heapHugePages             int64 // bytes; autoHeapHugePages: by the memory limit

	// The errors stream and dead letters.
	errorRetention     worker.ErrorRetention
	maxDeliver         int
	replyIdle          time.Duration
	metrics            bool // Prometheus exposition at /metrics on --http
	metricsScopeLabels bool // keep the otel_scope_* labels at /metrics

	// orchestrator writes replies in-process with its model (--orchestrator;
	// "": none).
	orchestrator cliflags.Orchestrator
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{limits: worker.DefaultLimits()}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := cliflags.NewEnv(fs)
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, def, usage)
		ef.Bind(name, env)
	}
	num := func(p *int, name, env string, def int, usage string) {
		fs.IntVar(p, name, def, usage)
		ef.Bind(name, env)
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage)
		ef.Bind(name, env)
	}
	str(&o.listen, "listen", "CONVSTREAM_LISTEN", "127.0.0.1:4222", "client address of the embedded NATS server (unused with --nats-url)")
	str(&o.websocket, "websocket", "CONVSTREAM_WEBSOCKET", "", "HOST:PORT of the embedded server's NATS WebSocket listener for the /ui viewer, plain ws:// (empty host: 127.0.0.1; default off)")
	fs.Var(&o.websocketOrigins, "websocket-origins", `comma-separated origins whose pages may use the WebSocket listener ("*": any; default: the --http server's)`)
	ef.Bind("websocket-origins", "CONVSTREAM_WEBSOCKET_ORIGINS")
	str(&o.dataDir, "data-dir", "CONVSTREAM_DATA_DIR", "./data", "JetStream store of the embedded server")
	num(&o.maxPayload, "max-payload", "CONVSTREAM_MAX_PAYLOAD", natsembed.DefaultMaxPayload, "largest message the embedded server accepts, in bytes")
	str(&o.httpAddr, "http", "CONVSTREAM_HTTP", "127.0.0.1:8080", `address of /healthz, /readyz and /metrics ("off" to disable)`)
	str(&o.pprofAddr, "pprof", "CONVSTREAM_PPROF", "", "HOST:PORT to serve net/http/pprof on, on its own listener (default: off)")
	var nf cliflags.NATS
	nf.Register(fs, ef,
		cliflags.WithDefault("nats-url", ""),
		cliflags.WithUsage("nats-url", "use this NATS server or cluster instead of an embedded one"),
		cliflags.WithUsage("nats-inbox-prefix", "prefix of the worker's reply subjects (default _INBOX; with --embedded-tenants, its tenant's); where tenants share a NATS account, the tenant's own"),
		cliflags.WithUsage("subject-prefix", "prefix of every subject; names the stream and bucket too"))
	o.embedded.register(fs, ef)
	var pingInterval time.Duration
	var maxPingsOut int
	dur(&pingInterval, "ping-interval", "CONVSTREAM_PING_INTERVAL", streams.DefaultPingInterval, "how often the worker pings its NATS server; with --max-pings-out unanswered, it reconnects to another server and reports not ready meanwhile")
	num(&maxPingsOut, "max-pings-out", "CONVSTREAM_MAX_PINGS_OUT", streams.DefaultMaxPingsOut, "unanswered pings after which the NATS server is taken for gone (frozen or cut off) and another is tried")
	str(&o.consumer, "consumer", "CONVSTREAM_CONSUMER", worker.DefaultConsumerName, "durable consumer name; workers sharing it share the events")
	num(&o.storage.StreamReplicas, "stream-replicas", "CONVSTREAM_STREAM_REPLICAS", 1, "replicas of the events stream")
	num(&o.storage.BucketReplicas, "bucket-replicas", "CONVSTREAM_BUCKET_REPLICAS", 1, "replicas of the snapshot bucket")
	fs.Var((*byteSize)(&o.storage.StreamMaxBytes), "stream-max-bytes", "largest size of the events stream, e.g. 10GiB (default: no limit; old events are dropped beyond it)")
	ef.Bind("stream-max-bytes", "CONVSTREAM_STREAM_MAX_BYTES")
	dur(&o.storage.StreamMaxAge, "stream-max-age", "CONVSTREAM_STREAM_MAX_AGE", 0, "oldest event the stream keeps (default: no limit)")
	dur(&o.storage.DuplicateWindow, "duplicate-window", "CONVSTREAM_DUPLICATE_WINDOW", worker.DuplicateWindow, "how long JetStream remembers event ids to drop republished copies")
	str(&o.storage.PlacementCluster, "placement-cluster", "CONVSTREAM_PLACEMENT_CLUSTER", "", "JetStream cluster to place the stream and bucket in")
	fs.Var((*stringList)(&o.storage.PlacementTags), "placement-tags", "comma-separated server tags the stream and bucket must be placed on")
	ef.Bind("placement-tags", "CONVSTREAM_PLACEMENT_TAGS")
	dur(&o.storage.WatchIdle, "watch-idle", "CONVSTREAM_WATCH_IDLE", worker.DefaultWatchIdle, "longest a consumer on the snapshot bucket (a KV watch, or a durable made by a UI login with kvWatch) lives unused; one asking for more is refused (0 or negative: no limit)")
	num(&o.storage.Partitions, "partitions", "CONVSTREAM_PARTITIONS", 0, "partitions of the events stream, each owned by one worker at a time (0: one shared consumer); the same on every worker, fixed for a stream")
	fs.BoolVar(&o.storage.Reconcile, "reconcile", false, "change the settings of the existing events, errors and checkpoint streams, snapshot bucket and consumers (replicas, limits, duplicate window, ack wait, max deliver, pinned TTL) to this worker's; without it a worker whose settings differ stays not ready, naming them, until they agree (docs/operations.md, \"Changing settings\")")
	ef.Bind("reconcile", "CONVSTREAM_RECONCILE")
	dur(&o.pinnedTTL, "pinned-ttl", "CONVSTREAM_PINNED_TTL", worker.DefaultPinnedTTL, "with --partitions: how long a silent worker keeps its partitions before another takes them over")
	num(&o.lanes, "lanes", "CONVSTREAM_LANES", worker.DefaultLanes(), "conversations applied in parallel")
	num(&o.loads, "loads", "CONVSTREAM_LOADS", worker.DefaultLoads, "conversations loaded from the store at once, off their lanes (a new conversation, or one the cache let go)")
	num(&o.cache, "cache-conversations", "CONVSTREAM_CACHE_CONVERSATIONS", worker.DefaultCacheConversations, "conversations kept in memory (least recently used dropped, rebuilt from JetStream)")
	o.cacheBytes = worker.DefaultCacheBytes
	fs.Var((*byteSize)(&o.cacheBytes), "cache-bytes", "memory the cached conversations may take, estimated from their JSON and structures, e.g. 512MiB (least recently used stored and dropped past it; 0: no limit; default 1GiB)")
	ef.Bind("cache-bytes", "CONVSTREAM_CACHE_BYTES")
	dur(&o.cacheIdle, "cache-idle", "CONVSTREAM_CACHE_IDLE", worker.DefaultCacheIdle, "how long a cached conversation goes unused before its index is let go, rebuilt by its next event (0: never)")
	dur(&o.cacheTTL, "cache-ttl", "CONVSTREAM_CACHE_TTL", worker.DefaultCacheTTL, "how long a cached conversation goes unused before it is let go (checkpointed first), rebuilt by its next event or read (0: only when the cache needs its room)")
	maxEventBytes := int64(worker.DefaultMaxEventBytes)
	fs.Var((*byteSize)(&maxEventBytes), "max-event-bytes", "largest event accepted (headers and payload), e.g. 2MiB")
	ef.Bind("max-event-bytes", "CONVSTREAM_MAX_EVENT_BYTES")
	num(&o.limits.MaxMessages, "max-messages", "CONVSTREAM_MAX_MESSAGES", worker.DefaultMaxMessages, "most messages a conversation may hold")
	var maxSnapshotBytes int64
	fs.Var((*byteSize)(&maxSnapshotBytes), "max-snapshot-bytes", "largest snapshot published, e.g. 8MiB (0: the server's max payload)")
	ef.Bind("max-snapshot-bytes", "CONVSTREAM_MAX_SNAPSHOT_BYTES")
	num(&o.limits.MaxBranchDepth, "max-branch-depth", "CONVSTREAM_MAX_BRANCH_DEPTH", worker.DefaultMaxBranchDepth, "most branch points that may nest in a conversation's context tree (a branch inside a branch ...); an event nesting them deeper is rejected too_deep")
	str(&o.pipelinesDir, "pipelines-dir", "CONVSTREAM_PIPELINES_DIR", "", "directory of pipeline specs NAME.yaml|.yml|.json (default: the built-in spec only)")
	dur(&o.inferenceTimeout, "inference-timeout", "CONVSTREAM_INFERENCE_TIMEOUT", worker.DefaultInferenceTimeout, "longest pipeline run")
	dur(&o.eraseTimeout, "erase-timeout", "CONVSTREAM_ERASE_TIMEOUT", worker.DefaultEraseTimeout, "longest erasure of a conversation (convctl erase); one that runs out answers with the error, and asked again erases what is left")
	dur(&o.inferenceWait, "inference-wait", "CONVSTREAM_INFERENCE_WAIT", worker.DefaultInferenceWait, "how long an inference request waits for events stored before it to be applied")
	num(&o.inferenceWorkers, "inference-workers", "CONVSTREAM_INFERENCE_WORKERS", worker.DefaultInferenceWorkers(), "inference and doctor requests served at once, off the lanes that apply events (default: half the CPUs the process may use, at least 1)")
	num(&o.inferenceQueue, "inference-queue", "CONVSTREAM_INFERENCE_QUEUE", worker.DefaultInferenceQueue, "inference and doctor requests that may wait for a free --inference-workers slot; one more is refused at once with code busy and retryAfterMs (0: none waits)")
	dur(&o.inferenceQueueWait, "inference-queue-wait", "CONVSTREAM_INFERENCE_QUEUE_WAIT", worker.DefaultInferenceQueueWait, "how long a request waits for a free --inference-workers slot before it is refused with code busy and retryAfterMs")
	o.inferenceLimits.MaxExpansionBytes = enginecore.DefaultMaxExpansionBytes
	fs.Var((*byteSize)(&o.inferenceLimits.MaxExpansionBytes), "inference-max-expansion-bytes", "most bytes a pipeline run's expansions (placeholder variables, templates) may add to its messages, e.g. 8MiB; a run that would add more fails with code limit_exceeded (default 4MiB; a pipeline spec's limits may lower it)")
	ef.Bind("inference-max-expansion-bytes", "CONVSTREAM_INFERENCE_MAX_EXPANSION_BYTES")
	num(&o.inferenceLimits.MaxExpansionDepth, "inference-max-expansion-depth", "CONVSTREAM_INFERENCE_MAX_EXPANSION_DEPTH", enginecore.DefaultMaxExpansionDepth, "most rounds a recursive expansion (a variable whose value holds placeholders) may take in a pipeline run; one that needs more fails with code limit_exceeded (a pipeline spec's limits may lower it)")
	dur(&o.ackWait, "ack-wait", "CONVSTREAM_ACK_WAIT", worker.DefaultAckWait, "time before JetStream redelivers an event a worker neither acknowledged nor reported in progress (a dead worker's events wait this long)")
	dur(&o.snapshotMax, "snapshot-max-interval", "CONVSTREAM_SNAPSHOT_MAX_INTERVAL", worker.DefaultSnapshotMaxInterval, "how far --snapshot-interval stretches while the bucket falls behind (more writes in flight than the worker aims for); at or below --snapshot-interval: fixed")
	dur(&o.snapshotInterval, "snapshot-interval", "CONVSTREAM_SNAPSHOT_INTERVAL", worker.DefaultSnapshotInterval, "least time between stores of a changed conversation's full snapshot in the bucket; a store is put off by up to half of it to go out with others (0: after every event); deltas are published at once")
	o.headsFrom = worker.DefaultHeadsConfirmedFrom
	fs.Var((*byteSize)(&o.headsFrom), "heads-confirmed-from", "with --bucket-replicas above 1: the mean size of the snapshots read from which a worker reads their heads with a direct get the bucket's leader confirms, instead of from the leader, e.g. 64KiB (0: always; 1TiB: never; default 32KiB, measured on loopback)")
	ef.Bind("heads-confirmed-from", "CONVSTREAM_HEADS_CONFIRMED_FROM")
	dur(&o.storeStall, "store-stall-limit", "CONVSTREAM_STORE_STALL_LIMIT", worker.DefaultStoreStallLimit, "how long snapshot writes may all fail, none succeeding, before /readyz reports the worker not ready (failed writes are retried, their events kept unacknowledged; 0: never)")
	fs.BoolVar(&o.checkpoints, "checkpoints", worker.DefaultCheckpoints, "write a conversation's messages to the checkpoint bucket when letting go of it (eviction, hand-off, stop) or when it goes idle (--cache-idle), so that its next rebuild replays only later events; false: every rebuild replays from the first event, and no checkpoint bucket is needed")
	ef.Bind("checkpoints", "CONVSTREAM_CHECKPOINTS")
	fs.BoolVar(&o.compactEvents, "compact-events", worker.DefaultEventCompaction, "once a conversation's checkpoint is written, purge its events up to it from the events stream, which then stays bounded by what conversations hold rather than by their history; needs --checkpoints (a compacted stream rebuilds its conversations from their checkpoints); only on a stream that says it may be compacted: one this release created, or one turned on with convctl compaction --enable")
	ef.Bind("compact-events", "CONVSTREAM_COMPACT_EVENTS")
	fs.Float64Var(&o.compactRatio, "compact-ratio", worker.DefaultCompactRatio, "with --compact-events: checkpoint a busy conversation, and so purge its events, once its events since its last checkpoint add up to more than this multiple of what it holds; the events stream then holds about 1+ratio times what busy conversations hold (lower: more checkpoint writes; 0: only the rebuild bound's checkpoints)")
	ef.Bind("compact-ratio", "CONVSTREAM_COMPACT_RATIO")
	dur(&o.shutdownTimeout, "shutdown-timeout", "CONVSTREAM_SHUTDOWN_TIMEOUT", 30*time.Second, "longest graceful shutdown")
	num(&o.gcPercent, "gc-percent", "CONVSTREAM_GC_PERCENT", defaultGCPercent, "garbage collector target, as GOGC (which wins when set): heap growth in percent of the live heap before a collection")
	dur(&o.idleGC, "idle-gc", "CONVSTREAM_IDLE_GC", defaultIdleGC, "collect garbage after a period this long in which the process was nearly idle, when a collection is at least an eighth due, so that it does not fall under load (0: off)")
	fs.Float64Var(&o.memoryLimitRatio, "memory-limit-ratio", 0.9, "soft memory limit (GOMEMLIMIT, which wins when set) as a fraction of the container's memory limit (cgroup), or of the machine's memory when there is none; 0: none")
	ef.Bind("memory-limit-ratio", "CONVSTREAM_MEMORY_LIMIT_RATIO")
	var heapHuge string
	str(&heapHuge, "heap-huge-pages", "CONVSTREAM_HEAP_HUGE_PAGES", "auto", `where the machine's transparent huge pages are "madvise": heap address space to mark for them at start, e.g. 2GiB, so that the heap grows into 2 MiB pages rather than taking a page fault for each 4 KiB (docs/operations.md, "Huge pages"); "auto": half the soft memory limit, at most 4GiB; "off" or 0: none`)
	// The errors stream and dead letters (docs/operations.md, "Errors stream and dead letters").
	o.errorRetention = worker.DefaultErrorRetention()
	dur(&o.errorRetention.MaxAge, "errors-max-age", "CONVSTREAM_ERRORS_MAX_AGE", worker.DefaultErrorsMaxAge, "oldest rejection, pipeline failure or dead letter the errors stream keeps (negative: no limit)")
	fs.Var((*byteSize)(&o.errorRetention.MaxBytes), "errors-max-bytes", "largest size of the errors stream, e.g. 1GiB; past it new records are published but not kept, so that no conversation's records push out another's (default 256MiB; halved until it fits a server with less room)")
	ef.Bind("errors-max-bytes", "CONVSTREAM_ERRORS_MAX_BYTES")
	fs.Int64Var(&o.errorRetention.MaxPerConversation, "errors-max-per-conversation", worker.DefaultErrorsMaxPerConversation, "records the errors stream keeps per conversation, the newest (negative: no limit)")
	ef.Bind("errors-max-per-conversation", "CONVSTREAM_ERRORS_MAX_PER_CONVERSATION")
	dur(&o.replyIdle, "reply-idle-timeout", "CONVSTREAM_REPLY_IDLE_TIMEOUT", worker.DefaultReplyIdleTimeout, "how long a streaming reply may go without a chunk before the worker completes it as interrupted with what was written")
	num(&o.maxDeliver, "max-deliver", "CONVSTREAM_MAX_DELIVER", worker.DefaultMaxDeliver, "deliveries of an event before it is dead-lettered (reported on its conversation's errors subject and kept in the errors stream) instead of retried again")
	str(&o.logLevel, "log-level", "CONVSTREAM_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&o.logFormat, "log-format", "CONVSTREAM_LOG_FORMAT", "json", "json or text")
	fs.BoolVar(&o.metrics, "metrics", true, "serve the metrics at /metrics on the --http listener in the Prometheus text format, beside any OTLP export")
	ef.Bind("metrics", "CONVSTREAM_METRICS")
	fs.BoolVar(&o.metricsScopeLabels, "metrics-scope-labels", false, "keep the otel_scope_name, otel_scope_version and otel_scope_schema_url labels on every series of /metrics (the same on all of the worker's)")
	ef.Bind("metrics-scope-labels", "CONVSTREAM_METRICS_SCOPE_LABELS")
	o.orchestrator.Register(fs, ef, "orchestrator-", "",
		`also write replies in this process with this model: builtin (no key, no network), openai:MODEL, anthropic:MODEL or gemini:MODEL (keys from OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or their _FILE; OPENAI_BASE_URL for vLLM, Ollama, LiteLLM); default: none, cmd/orchestrator's job`)
	version := fs.Bool("version", false, "print the version and commit of this build and exit")
	fs.Usage = func() { printUsage(stderr, fs) }
	if err := ef.Parse(args, getenv); err != nil {
		return nil, err
	}
	o.conn, o.prefix = nf.Conn, nf.Prefix
	if pingInterval <= 0 || maxPingsOut <= 0 {
		return nil, fmt.Errorf("--ping-interval %v, --max-pings-out %d: want positive values", pingInterval, maxPingsOut)
	}
	o.conn.PingInterval, o.conn.MaxPingsOut = pingInterval, maxPingsOut
	if *version {
		return nil, errVersion
	}
	if maxEventBytes > math.MaxInt32 || maxSnapshotBytes > math.MaxInt32 {
		return nil, fmt.Errorf("--max-event-bytes %d, --max-snapshot-bytes %d: want at most %d", maxEventBytes, maxSnapshotBytes, math.MaxInt32)
	}
	o.limits.MaxEventBytes, o.limits.MaxSnapshotBytes = int(maxEventBytes), int(maxSnapshotBytes)
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	hh, err := parseHeapHugePages(heapHuge)
	if err != nil {
		return nil, err
	}
	o.heapHugePages = hh
	if o.storage.WatchIdle <= 0 {
		o.storage.WatchIdle = -1 // no limit: Storage's zero is the default
	}
	if o.memoryLimitRatio < 0 || o.memoryLimitRatio > 1 {
		return nil, fmt.Errorf("--memory-limit-ratio %v: want 0 to 1", o.memoryLimitRatio)
	}
	if o.inferenceLimits.MaxExpansionBytes <= 0 || o.inferenceLimits.MaxExpansionDepth <= 0 {
		return nil, fmt.Errorf("--inference-max-expansion-bytes %d, --inference-max-expansion-depth %d: want positive values",
			o.inferenceLimits.MaxExpansionBytes, o.inferenceLimits.MaxExpansionDepth)
	}
	if o.maxPayload <= 0 || o.maxPayload > 64<<20 {
		return nil, fmt.Errorf("--max-payload %d: want 1 to %d bytes (NATS's limit)", o.maxPayload, 64<<20)
	}
	return o, nil
}

func newLogger(o *options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	switch o.logFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want json or text", o.logFormat)
}

// readableDuration writes a duration as Go prints it ("1.5s", "250ms"),
// as the text handler does, where the JSON handler would write
// nanoseconds (TestLogDurations).
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// run starts everything, waits for ctx to end, and shuts down in order:
// stop fetching and finish in-flight events, stop serving HTTP, drain the
// NATS connection, stop the embedded server, flush telemetry. started, when
// not nil, is called with the worker once it is ready (for tests).
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(w *worker.Worker, natsURL, httpAddr string)) error {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	// Every line names the worker (worker.WithID).
	workerID := nuid.Next()
	log = log.With("worker_id", workerID)
	subjects, err := streams.NewSubjects(o.prefix)
	if err != nil {
		return err
	}
	tuneMemory(o.gcPercent, o.memoryLimitRatio, o.heapHugePages, getenv, log)
	var telOpts []telemetryOption
	if o.metrics && o.httpAddr != "" && o.httpAddr != "off" {
		telOpts = append(telOpts, withPrometheus(o.metricsScopeLabels))
	}
	tel, err := setupTelemetry(ctx, getenv, log, telOpts...)
	if err != nil {
		return err
	}
	defer func() {
		if err := tel.close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("telemetry flush", "err", err)
		}
	}()

	workerOpts := []worker.Option{
		worker.WithSubjects(subjects),
		worker.WithLimits(o.limits),
		worker.WithLanes(o.lanes),
		worker.WithLoads(o.loads),
		worker.WithCacheConversations(o.cache),
		worker.WithCacheBytes(o.cacheBytes),
		worker.WithCacheIdle(o.cacheIdle),
		worker.WithCacheTTL(o.cacheTTL),
		worker.WithConsumerName(o.consumer),
		worker.WithStorage(o.storage),
		worker.WithAckWait(o.ackWait),
		worker.WithPinnedTTL(o.pinnedTTL),
		worker.WithSnapshotInterval(o.snapshotInterval),
		worker.WithSnapshotMaxInterval(o.snapshotMax),
		worker.WithHeadsConfirmedFrom(o.headsFrom),
		worker.WithStoreStallLimit(o.storeStall),
		worker.WithCheckpoints(o.checkpoints),
		worker.WithEventCompaction(o.compactEvents),
		worker.WithCompactRatio(o.compactRatio),
		worker.WithErrorRetention(o.errorRetention),
		worker.WithMaxDeliver(o.maxDeliver),
		worker.WithReplyIdleTimeout(o.replyIdle),
		worker.WithInferenceTimeout(o.inferenceTimeout),
		worker.WithEraseTimeout(o.eraseTimeout),
		worker.WithInferenceWait(o.inferenceWait),
		worker.WithInferenceWorkers(o.inferenceWorkers),
		worker.WithInferenceQueue(o.inferenceQueue),
		worker.WithInferenceQueueWait(o.inferenceQueueWait),
		worker.WithInferenceLimits(o.inferenceLimits),
		worker.WithPipelines(newSpecPipelines(processors.Default(), o.pipelinesDir)),
		worker.WithLogger(log),
		worker.WithID(workerID),
		worker.WithTracerProvider(tel.tracer),
		worker.WithMeterProvider(tel.meter),
	}
	// The worker's settings are checked before a server starts or a
	// connection is made.
	if err := worker.CheckOptions(workerOpts...); err != nil {
		return err
	}

	var ns *server.Server
	natsURL := o.conn.URL
	var extra []nats.Option
	if natsURL == "" {
		ecfg := natsembed.Config{
			Listen: o.listen, StoreDir: o.dataDir, MaxPayload: int32(o.maxPayload), Logger: log,
			WebSocket: o.websocket, WebSocketOrigins: websocketOrigins(o),
		}
		if err := o.embedded.apply(&ecfg, &o.conn, subjects); err != nil {
			return err
		}
		unlock, err := lockDataDir(o.dataDir)
		if err != nil {
			return err
		}
		defer unlock()
		if err := checkFree("--listen", o.listen); err != nil {
			return err
		}
		ns, err = natsembed.Start(ecfg)
		if err != nil {
			return err
		}
		defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
		natsURL = ns.ClientURL()
		o.conn.URL, extra = natsembed.Connection(ns)
		log.Info("embedded NATS server started", "url", natsURL, "store", o.dataDir)
		if o.websocket != "" {
			log.Info("NATS WebSocket listener (no TLS)", "url", ns.WebsocketURL(), "origins", websocketOrigins(o))
		}
		if host, _, _ := net.SplitHostPort(o.listen); !isLoopback(host) && !o.embedded.required() {
			log.Warn("the embedded NATS server accepts unauthenticated clients beyond this machine", "listen", o.listen)
		}
	}
	// The health endpoints serve before NATS is reached, so that
	// Kubernetes sees a live process that is not ready while it waits.
	health := healthswitch.New("waiting for NATS at " + streams.RedactURL(natsURL))
	var httpSrv *http.Server
	httpAddr := ""
	if o.httpAddr != "" && o.httpAddr != "off" {
		ln, err := net.Listen("tcp", o.httpAddr)
		if err != nil {
			return fmt.Errorf("--http: %w", err)
		}
		httpAddr = ln.Addr().String()
		httpSrv = &http.Server{Handler: otelsetup.WithMetrics(httpHandler(health, subjects, o.conn.InboxPrefix, ns), tel.metrics), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health endpoint", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = httpSrv.Shutdown(sctx)
			cancel()
		}()
		log.Info("serving /healthz, /readyz and the /ui viewer", "addr", httpAddr, "metrics", tel.metrics != nil)
	}

	o.conn.Name = "convstream-worker"
	o.conn.Logger = log
	o.conn.Wait = true
	nc, err := streams.Connect(o.conn, extra...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if !nc.IsConnected() {
		if err := streams.WaitConnected(ctx, nc); err != nil {
			return err
		}
		log.Info("NATS connected", "server", nc.ConnectedUrlRedacted())
	}

	w, err := worker.New(nc, workerOpts...)
	if err != nil {
		return err
	}
	health.Set(w.HealthHandler())

	if _, err := servePprof(ctx, o.pprofAddr, log); err != nil {
		return err
	}
	if o.idleGC > 0 {
		go idleCollector(ctx, o.idleGC, log)
	}

	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	// The orchestrator's replies end (interrupted, when ctx's end cuts
	// them) before the connection drains.
	waitOrchestrator := func() {}
	if o.orchestrator.Model != "" {
		if waitOrchestrator, err = startOrchestrator(ctx, nc, o, subjects, log, tel, getenv); err != nil {
			return err
		}
	}
	if started != nil {
		go func() {
			for w.Ready() != nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			started(w, natsURL, httpAddr)
		}()
	}

	select {
	case err = <-runErr:
		// Run returns before ctx ends only when it cannot start.
	case <-ctx.Done():
		log.Info("shutting down", "timeout", o.shutdownTimeout)
		select {
		case err = <-runErr:
		case <-time.After(o.shutdownTimeout):
			err = errors.New("shutdown timed out; unacknowledged events will be redelivered")
		}
	}
	waitOrchestrator()
	if dErr := drain(nc, 10*time.Second); dErr != nil {
		log.Warn("draining the NATS connection", "err", dErr)
	}
	if err == nil {
		log.Info("stopped")
	}
	return err
}

// drain flushes what the connection holds and closes it.
func drain(nc *nats.Conn, timeout time.Duration) error {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil
		}
		return err
	}
	select {
	case <-closed:
		return nil
	case <-time.After(timeout):
		return errors.New("drain timed out")
	}
}

// isLoopback reports whether host names this machine only.
func isLoopback(host string) bool {
	if host == "localhost" || host == "" { // the embedded server binds 127.0.0.1 for an empty host
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
