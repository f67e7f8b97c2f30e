package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// Worker consumes the events stream, keeps conversations up to date,
// publishes and stores their snapshots, and answers inference requests.
// Create it with New and start it with Run.
type Worker struct {
	id      string // in every log line and in the members bucket
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     config
	tracer  trace.Tracer
	traced  bool // spans are recorded: the tracer provider is not the no-op one
	metrics *instruments
	// partitionMetrics counts the changes of the partitions it owns.
	partitionMetrics *partitionMetrics
	handler          handlerFunc

	// Set by Run.
	stream jetstream.Stream
	lanes  *lanes
	owned  ownedSet   // by partition, when partitioned
	own    *ownership // when partitioned
	ready  atomic.Bool
	// waiting is why a setup call is being retried (untilAvailable), for
	// Ready; nil when none is.
	waiting atomic.Pointer[error]
	// eventsLost describes the last loss of events found (state_eventslost.go).
	eventsLost atomic.Pointer[string]
	// audit holds what the stored snapshots' audit found (store_audit.go).
	audit   snapshotAudit
	cached  atomic.Int64 // what the lanes' caches weigh
	held    atomic.Int64 // how many conversations they hold
	writers *writers     // the goroutines that run snapshot and checkpoint writes

	// newerForm is the last form of a newer release met (version.go).
	newerForm atomic.Pointer[newerForm]

	// snapshots writes the snapshots to their bucket (store_snapshotstore.go).
	snapshots *snapshotStore
	// degraded holds the conversations held at a limit (store_degraded.go).
	degraded degradedSet
	runs     atomic.Bool
	// cp writes and reads conversations' checkpoints (nil: checkpoints
	// off); set by Run.
	cp *checkpointer
	// loads bounds the conversations loaded off the lanes at once (see
	// park).
	loads *loadAhead
	// reads reads the stored snapshots and events (package read).
	reads *read.Reader
	// progress keeps the events the worker holds from redelivery.
	progress *inProgress
	// gaps watches each consumer's deliveries for breaks (consumer_gaps.go).
	gaps []gapWatch
	// consumers are the consumers Run made, by partition, for their
	// gauges (consumer_metrics.go) and their floors (consumer_purges.go).
	consumers atomic.Pointer[[]jetstream.Consumer]
	// purges purges the events stream below the consumers' floors; set
	// by Run (read by the convstream.purges.held gauge).
	purges atomic.Pointer[purger]
	// compaction is the checkpointer's compactor once Run made it, for
	// the convstream.compaction.purging gauge.
	compaction atomic.Pointer[compactor]
	// replies are the conversations with replies being written (live.go).
	replies replyWatch

	// infer answers inference and doctor requests; Run starts it when
	// WithPipelines gave pipelines.
	infer *inferenceServer

	// failures keeps the last failure of events being redelivered, for
	// their dead letters (reports_deadletter.go).
	failures failureNotes
	// erasures holds the conversations erased lately (erase.go).
	erasures erasures
	// reports writes rejections and failures to the errors stream.
	reports *reports
}

// New returns a worker that talks to NATS over nc. It creates
// nothing on the server until Run.
func New(nc *nats.Conn, opts ...Option) (*Worker, error) {
	cfg, err := configOf(opts)
	if err != nil {
		return nil, err
	}
	// Every log line names the worker, with the id it has among the
	// members of a partitioned stream: an operator follows a fault across
	// the fleet's logs by it.
	id := cfg.id
	if id == "" {
		id = nuid.Next()
		cfg.logger = cfg.logger.With("worker_id", id)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	ins, err := newInstruments(cfg.meterProvider)
	if err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	w := &Worker{
		id:      id,
		nc:      nc,
		js:      js,
		cfg:     cfg,
		tracer:  cfg.tracerProvider.Tracer(streams.InstrumentationName),
		traced:  traced(cfg.tracerProvider),
		metrics: ins,
		writers: newWriters(),
		gaps:    newGapWatches(cfg.storage.Partitions),
		reports: &reports{js: js, subjects: cfg.subjects, source: cfg.source, log: cfg.logger},
	}
	w.loads = newLoadAhead(cfg.loads, loadDeps{
		load:       w.load,
		handle:     func(ctx context.Context, d *delivery) { w.settle(ctx, d, w.handler(ctx, d)) },
		stale:      w.handBackStale,
		giveBack:   w.giveBack,
		do:         func(ctx context.Context, l *lane, fn func()) error { return w.lanes.do(ctx, l, fn) },
		partitions: cfg.storage.Partitions,
		log:        cfg.logger,
	})
	w.snapshots = newSnapshotStore(cfg, w.writers, nc.MaxPayload, ins, &w.degraded, w.storeHooks())
	w.progress = newInProgress(nc)
	w.infer = &inferenceServer{nc: nc, subjects: cfg.subjects, queueGroup: cfg.consumer, source: cfg.source, log: cfg.logger,
		tracer: w.tracer, metrics: ins, reports: w.reports, pipelines: cfg.pipelines,
		timeout: cfg.inferenceTimeout, wait: cfg.inferenceWait, misdirected: rate.Sometimes{First: 1, Interval: time.Minute},
		admission: newAdmission(cfg.inferenceWorkers, cfg.inferenceQueue, cfg.inferenceQueueWait),
		runLimits: cfg.inferenceLimits, maxMessages: cfg.limits.MaxMessages,
		lastStored: w.lastStoredSeq, read: w.readOnLane}
	if err := w.observeCache(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if err := w.observePurges(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if err := w.observeCompaction(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if err := w.observeDegraded(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if err := w.observeConsumers(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if w.partitionMetrics, err = w.observePartitions(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	if err := w.observeConnection(cfg.meterProvider); err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	// decode runs before the chain (it cannot fail); then
	// validate → apply → publish, wrapped outermost first. The stream is
	// provisioned by Run: the rejection middleware reads it when it
	// deletes an event.
	removeEvent := func(ctx context.Context, seq uint64) error { return w.stream.DeleteMsg(ctx, seq) }
	w.handler = chain([]stage{w.validate, w.apply, w.publish},
		tracing(w.tracer, w.traced),
		measuring(ins),
		rejection(w.reports.rejection, removeEvent, &w.degraded, cfg.logger),
		recoverer(cfg.logger))
	return w, nil
}

// Run provisions the stream and buckets, consumes events and serves
// inference until ctx ends. While it runs, the connection's async errors
// are counted (and still handed to its error handler). Then it stops fetching, lets in-flight and
// already fetched events finish (each is acknowledged or redelivered
// later), stops the inference endpoint, flushes and returns nil. It returns
// an error only when it cannot start.
func (w *Worker) Run(ctx context.Context) error {
	if !w.runs.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: Run called twice", streams.ErrInvalidConfig)
	}
	log := w.cfg.logger
	var stream jetstream.Stream
	var kv jetstream.KeyValue
	err := w.untilAvailable(ctx, "stream and bucket", func() (err error) {
		stream, kv, err = Provision(ctx, w.js, w.cfg.subjects, w.cfg.storage, log)
		return err
	})
	if err != nil {
		return err
	}
	w.stream = stream
	purges := newPurger(stream, w.partitions(), w.consumerList, w.partitionOf, log)
	w.purges.Store(purges)
	purging, stopPurging := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPurging()
	go purges.run(purging)
	err = w.untilAvailable(ctx, "errors stream", func() error {
		return provisionErrors(ctx, w.js, errorsStreamConfig(w.cfg.subjects, w.cfg.storage, w.cfg.errorRetention), w.cfg.storage.Reconcile, log)
	})
	if err != nil {
		return err
	}
	err = w.untilAvailable(ctx, "replies stream", func() error {
		return provisionReplies(ctx, w.js, w.cfg.subjects, w.cfg.storage, log)
	})
	if err != nil {
		return err
	}
	// Before any pull: JetStream gives up on an event when a worker asks
	// for more, and announces it then.
	// Records are still written while the worker drains.
	deadLetters, err := w.watchDeadLetters(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer func() { _ = deadLetters.Unsubscribe() }()
	// An async error on a subscription may have dropped events: every
	// consumer is checked again (consumer_gaps.go).
	defer w.watchAsyncErrors(context.WithoutCancel(ctx))()
	w.snapshots.open(ctx, kv)
	w.reads = read.New(ctx, readConfig(w.nc, w.cfg, stream, kv))
	log.DebugContext(ctx, "snapshot heads", "read", w.reads.Mode(), "mean", w.reads.MeanSize())
	if w.cfg.checkpoints {
		var bucket jetstream.KeyValue
		err := w.untilAvailable(ctx, "checkpoint bucket", func() (err error) {
			bucket, err = provisionCheckpoints(ctx, w.js, w.cfg.subjects, w.cfg.storage, log)
			return err
		})
		if err != nil {
			return err
		}
		w.cp = newCheckpointer(bucket, w.reads.Keys(ctx, bucket), w.writers, w.metrics, log, w.nc.MaxPayload, w.cfg.checkpointsWaiting,
			w.cfg.limits.conversationOptions())
		w.cp.erased = w.erasures.covers
		mark := compactionOf(stream.CachedInfo().Config.Metadata)
		w.cp.compactor = newCompactor(stream, purges, func(id string) []string {
			return []string{w.cfg.subjects.StoredEvents(id, w.partitions()), w.cfg.subjects.StoredChunks(id, w.partitions())}
		}, w.cfg.compaction, w.cfg.compactRatio, w.metrics, log, mark)
		if w.cfg.compactionPoll > 0 {
			w.cp.compactor.poll, w.cp.compactor.settle = w.cfg.compactionPoll, w.cfg.compactionSettle
		}
		if w.cfg.deleteSpacing > 0 {
			w.cp.compactor.spacing = w.cfg.deleteSpacing
		}
		if w.cfg.compaction && !mark.On {
			log.WarnContext(ctx, "events not compacted: the events stream was made by a release without compaction; "+
				"once every worker runs this release, turn it on with convctl compaction --enable (docs/operations.md, \"Event compaction\")",
				"stream", w.cfg.subjects.EventsStream())
		}
		w.compaction.Store(w.cp.compactor)
		if !w.cp.compactor.settled(time.Now()) {
			watch, stop := context.WithCancel(ctx)
			defer stop() // not past Run
			go w.cp.compactor.watchCompaction(watch, log)
		}
	}
	if w.partitions() > 0 {
		return w.runPartitioned(ctx)
	}
	var cons jetstream.Consumer
	err = w.untilAvailable(ctx, "consumer", func() (err error) {
		cons, err = w.createConsumer(ctx, stream, w.consumerConfig())
		return err
	})
	if err != nil {
		return fmt.Errorf("worker: consumer %s: %w", w.cfg.consumer, err)
	}
	w.setConsumers([]jetstream.Consumer{cons})
	w.lanes = newLanes(w.cfg.lanes, w.cfg.laneDepth, w.cacheConfig())
	defer w.watchReplies(context.WithoutCancel(ctx))()
	it, err := cons.Messages(jetstream.PullMaxMessages(fetchWindow), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		w.lanes.shutdown()
		return fmt.Errorf("worker: consume: %w", err)
	}
	// Work started before shutdown runs to completion: it only stops the
	// fetching.
	work := context.WithoutCancel(ctx)
	if w.cfg.pipelines != nil {
		if err := w.infer.start(work); err != nil {
			it.Stop()
			w.lanes.shutdown()
			return err
		}
	}
	stopErasing, err := w.startErasing(work)
	if err != nil {
		it.Stop()
		w.infer.stop()
		w.lanes.shutdown()
		return err
	}
	defer stopErasing()
	w.progress.start(work, w.cfg.ackWait)
	w.ready.Store(true)
	go w.auditSnapshots(ctx) // once, in the background (store_audit.go)
	log.InfoContext(ctx, "worker consuming", "stream", stream.CachedInfo().Config.Name,
		"consumer", w.cfg.consumer, "lanes", w.cfg.lanes, "inference", w.cfg.pipelines != nil)

	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped: // the connection closed under us
		}
		it.Drain() // what was fetched is still handed out, then Next ends
	}()
	w.dispatch(work, it)
	close(stopped)
	w.finish(work)
	w.cfg.logger.InfoContext(work, "worker stopped")
	return nil
}

// consumerConfig is the durable consumer of an unpartitioned stream.
func (w *Worker) consumerConfig() jetstream.ConsumerConfig {
	var filters []string
	if w.stream == nil || !onlyEventsAndChunks(w.stream.CachedInfo().Config.Subjects, w.cfg.subjects) {
		// Chunks share the events stream and its order (streams.Subjects.Chunks).
		filters = []string{w.cfg.subjects.AllEvents(), w.cfg.subjects.AllChunks()}
	}
	return jetstream.ConsumerConfig{
		Durable:     w.cfg.consumer,
		Description: "convstream worker: applies message events in order",
		// No filter on a stream that holds the events and the chunks and
		// nothing else, as every stream Provision makes: with the two as
		// filters, nats-server matched each next message's subject against
		// them, about 39% of a flat-out worker's CPU profile, and without
		// them the worker applied about twice the events a second
		// (BENCHMARKS.md, "The unpartitioned consumer without filters";
		// TestConsumerFilters). A stream given other subjects keeps them.
		// Every purge of the stream reaches a consumer without filters;
		// the purger keeps them below its ack floor (consumer_purges.go),
		// without which TestLostDeliveriesHealed lost events.
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        w.cfg.ackWait,
		MaxDeliver:     w.cfg.maxDeliver, // then dead-lettered (reports_deadletter.go)
		// Far above what one worker holds (the fetch window, the lane
		// queues and the events awaiting a store): events a crashed worker
		// left unacknowledged keep their slots until AckWait, and must not
		// stall its successor.
		MaxAckPending: w.maxAckPending(fetchWindow),
	}
}

// onlyEventsAndChunks reports whether a stream of subjects holds the
// events and the chunks of s and nothing else.
func onlyEventsAndChunks(subjects []string, s streams.Subjects) bool {
	return len(subjects) == 2 && slices.Contains(subjects, s.AllEvents()) && slices.Contains(subjects, s.AllChunks())
}

// cacheConfig is what the lanes' caches keep.
func (w *Worker) cacheConfig() cacheConfig {
	return cacheConfig{conversations: w.cfg.cacheSize, bytes: w.cfg.cacheBytes, idle: w.cfg.cacheIdle, ttl: w.cfg.cacheTTL,
		total: &w.cached, held: &w.held, release: w.release,
		// A conversation gone quiet is checkpointed while it is compacted:
		// a crash writes none, and its next rebuild starts there.
		quiet: func(st *convState) bool { return w.cp.quiet(context.Background(), st) }}
}

// CacheBytes returns what the conversations cached by the lanes weigh now
// (see WithCacheBytes); 0 before Run.
func (w *Worker) CacheBytes() int64 { return w.cached.Load() }

// CachedConversations returns how many conversations the lanes hold now,
// against WithCacheConversations.
func (w *Worker) CachedConversations() int64 { return w.held.Load() }

// finish stops serving and lets the work handed to the lanes complete.
func (w *Worker) finish(work context.Context) {
	w.ready.Store(false)
	w.cfg.logger.InfoContext(work, "worker stopping: finishing in-flight work")
	w.infer.stop()
	w.loads.close() // their parked events are applied before the stores
	w.storeAll(work)
	w.cp.writeAll(work, w.lanes)
	w.lanes.shutdown()
	w.cp.stop(work) // before the connection closes: nothing writes on it after Run
	w.settlePurges(work)
	w.writers.stop()
	w.progress.close()
	if err := w.nc.FlushTimeout(5 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		w.cfg.logger.WarnContext(work, "flush on shutdown", "err", err)
	}
}

// purgeSettleBudget bounds how long a graceful stop waits for its
// consumers' floors to pass the purges they held back.
const purgeSettleBudget = 2 * time.Second

// settlePurges makes the purges the consumers' floors held back, once the
// stop's last events are acknowledged, for at most purgeSettleBudget;
// what is left stays in the stream until a later purge of its
// conversation.
func (w *Worker) settlePurges(ctx context.Context) {
	purges := w.purges.Load()
	if purges == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, purgeSettleBudget)
	defer cancel()
	if left := purges.settle(ctx); left > 0 {
		w.cfg.logger.InfoContext(ctx, "purges left for later: events not yet acknowledged hold them back", "subjects", left)
	}
}

// dispatch hands every fetched message to the lane of its conversation
// until the iterator is drained.
func (w *Worker) dispatch(ctx context.Context, it jetstream.MessagesContext) {
	pi := newPullIterator(it)
	for {
		m, err := pi.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
			return
		}
		if err != nil {
			// Missed heartbeats and the like: the iterator recovers.
			w.cfg.logger.WarnContext(ctx, "fetching events", "err", err)
			continue
		}
		gaps := w.delivered(ctx, 0, m)
		w.progress.hold(pendingAckOf(m))
		w.route(ctx, m, gaps)
	}
}

// route hands a fetched message to the lane of its conversation, behind
// the conversation's earlier events, without waiting for the lane (see
// laneQueue); gaps is its consumer's count of breaks as of its arrival
// (see gapWatch).
func (w *Worker) route(ctx context.Context, m jetstream.Msg, gaps uint32) {
	key := m.Subject()
	if id, ok := w.cfg.subjects.StoredConversationOf(key, w.partitions()); ok {
		key = id
	}
	l := w.lanes.pick(key)
	if err := w.lanes.enqueue(ctx, l, key, len(m.Data()), func(behind time.Duration) {
		w.handle(ctx, l, m, behind, gaps)
	}); err != nil {
		w.settled(m)
		_ = m.Nak()
	}
}

// handle runs one message through the handler and settles it; behind is
// how long it waited on the lane behind earlier events of its
// conversation, gaps its consumer's count of breaks as of its arrival.
func (w *Worker) handle(ctx context.Context, l *lane, m jetstream.Msg, behind time.Duration, gaps uint32) {
	if w.handBackStale(m) {
		return
	}
	d := w.decode(m)
	d.lane = l
	d.behind = behind
	d.gaps = gaps
	w.loads.process(ctx, l, d)
}

// handBackStale hands m back to the server, and reports whether it did,
// when it was delivered under a tenure of its partition that this worker
// has lost since: it was queued or parked before the loss, and the
// partition's next owner applies it.
func (w *Worker) handBackStale(m jetstream.Msg) bool {
	if w.own == nil || !w.own.stale(m) {
		return false
	}
	w.giveBack(m)
	return true
}

// giveBack hands m back to the server at once, for redelivery.
func (w *Worker) giveBack(m jetstream.Msg) {
	w.settled(m)
	_ = m.Nak()
}

// settle acknowledges a delivery by its outcome: ack when applied or
// skipped (once a stored snapshot covers it, see deferAck), terminate when
// rejected, and otherwise ask for redelivery after a backoff, forgetting
// the conversation when the event may have changed it in memory. One that
// failed before (its state could not be loaded or checked) is kept: it is
// as it was, and letting it go would apply its unstored events again.
func (w *Worker) settle(ctx context.Context, d *delivery, err error) {
	var ackErr error
	if err != nil || !d.unstored {
		w.settled(d.msg)
	}
	switch {
	case err == nil && d.unstored:
		w.snapshots.deferAck(ctx, d)
	case err == nil:
		ackErr = d.msg.Ack()
	case errors.Is(err, streams.ErrRejected):
		ackErr = d.msg.Term()
	default:
		if d.conversationID != "" && d.state != nil {
			d.lane.cache.Drop(d.conversationID)
		}
		if w.lastDelivery(d) {
			// Not redelivered again: kept as a dead letter with its reason.
			dlErr := w.deadLetterFailed(ctx, d, err)
			if dlErr == nil {
				ackErr = d.msg.Term()
				break
			}
			w.cfg.logger.ErrorContext(ctx, "dead letter not stored; JetStream's announcement of it will be", "seq", d.seq, "err", dlErr)
		}
		w.failures.note(d.seq, err.Error())
		delivered := max(d.delivered, 1)
		delay := backoff(delivered)
		w.cfg.logger.WarnContext(ctx, "event failed; will be redelivered", "subject", d.subject, "seq", d.seq,
			"delivered", delivered, "retry_in", delay, "err", err)
		ackErr = d.msg.NakWithDelay(delay)
	}
	if ackErr != nil {
		// The server redelivers after AckWait; applying again is a no-op.
		w.cfg.logger.WarnContext(ctx, "settling event", "subject", d.subject, "seq", d.seq, "err", ackErr)
	}
}

// fetchWindow is how many events the consumer buffers ahead of the lanes.
// At 256, a worker connected over TCP and driven flat out lost its pull
// now and then (nats: no heartbeat received) and waited out the missed
// heartbeats each time, about one stall a second; at 1024 it did not.
// Flat out over loopback TCP, 60,000 events: seven of seven runs stalled
// at 256 (6,300 to 18,000 ev/s), none of four at 1024 (25,600 to 26,600
// ev/s; BENCHMARKS.md). The mechanism is not known, only the measurement.
// Over the in-process connection both sizes did the same.
const fetchWindow = 1024

// pullExpiry is how long one pull request of the worker's consumers lasts;
// the server's heartbeats come every half of it. As short as nats.go
// allows, because a pull the server no longer holds while the client
// counts on it (nats.go issue 1622: under load, now and then; the server
// then sends no heartbeat) stalls the consumer until two heartbeats are
// missed: 30 seconds with the default expiry, 1 with this.
const pullExpiry = time.Second

// backoff is the redelivery delay after n deliveries: 100ms doubling, at
// most 10s.
func backoff(n uint64) time.Duration {
	d := 100 * time.Millisecond
	for i := uint64(1); i < n && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}
