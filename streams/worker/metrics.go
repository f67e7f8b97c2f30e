package worker

import (
	"context"
	"errors"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/convcache"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are the worker's metrics.
type instruments struct {
	applied, rejected, skipped, failed metric.Int64Counter
	// reapplied counts the applied events that were delivered before
	// (see measuring).
	reapplied     metric.Int64Counter
	eventDuration metric.Float64Histogram
	snapshotLat   metric.Float64Histogram
	rebuilds      metric.Int64Counter
	checkpoints   metric.Int64Counter
	// compactions counts the purges of conversations' events that
	// checkpoints cover, by outcome.
	compactions metric.Int64Counter
	// snapshotWrites counts snapshot writes by outcome; byWrite holds the
	// attribute option of each.
	snapshotWrites metric.Int64Counter
	byWrite        [writeOutcomes]metric.MeasurementOption
	// snapshotBytes and snapshotEventBytes count the bytes of the
	// snapshots stored and of the events they cover.
	snapshotBytes, snapshotEventBytes metric.Int64Counter
	// fromCheckpoint and fromEvents are the attribute options of a
	// rebuild's start.
	fromCheckpoint, fromEvents metric.MeasurementOption
	rebuildDuration            metric.Float64Histogram
	pipelineDuration           metric.Float64Histogram
	processorDuration          metric.Float64Histogram
	inferences                 metric.Int64Counter
	// inferenceDuration is an inference request's time from its handler
	// to its answer, by outcome.
	inferenceDuration metric.Float64Histogram
	// deadLetters counts the events dead-lettered.
	deadLetters metric.Int64Counter
	// inferenceWarnings counts the warnings of inference contexts, by
	// format.
	inferenceWarnings metric.Int64Counter
	// evictions counts conversations the caches let go of; forRoom and
	// unused are the attribute options of its reasons.
	evictions       metric.Int64Counter
	forRoom, unused metric.MeasurementOption
	// byType holds the attribute option of each type of the events stream
	// (streams.EventTypes), "unknown" standing for any other (a rejected event's type is the sender's
	// string: one series each would have no bound); byOutcome that of each
	// outcome. Built once: building them per event was 1% of the worker's
	// CPU at peak.
	byType    map[string]metric.MeasurementOption
	byOutcome [rejected + 1]metric.MeasurementOption
	// gaps counts breaks in a consumer's deliveries, byGap holding the
	// attribute option of each cause (see consumer_gaps.go); healed counts events
	// that waited for their conversation to be rebuilt past missing ones.
	gaps   metric.Int64Counter
	byGap  [gapCauses]metric.MeasurementOption
	healed metric.Int64Counter
	// damaged counts damaged storage the worker found, by what.
	damaged metric.Int64Counter
	// asyncErrors counts the NATS connection's async errors; slow and
	// otherAsync are the attribute options of their kinds.
	asyncErrors      metric.Int64Counter
	slow, otherAsync metric.MeasurementOption
}

// typeOption returns the attribute option of event type typ.
func (ins *instruments) typeOption(typ string) (string, metric.MeasurementOption) {
	if o, ok := ins.byType[typ]; ok {
		return typ, o
	}
	return "unknown", ins.byType["unknown"]
}

// Metric names.
const (
	MetricEventsApplied      = "convstream.events.applied"
	MetricEventsRejected     = "convstream.events.rejected"
	MetricEventsSkipped      = "convstream.events.skipped"
	MetricEventsReapplied    = "convstream.events.reapplied"
	MetricEventsFailed       = "convstream.events.failed"
	MetricEventDuration      = "convstream.event.duration"
	MetricSnapshotLatency    = "convstream.snapshot.latency"
	MetricRebuilds           = "convstream.rebuilds"
	MetricRebuildDuration    = "convstream.rebuild.duration"
	MetricCheckpoints        = "convstream.checkpoints"
	MetricCompactions        = "convstream.compactions"
	MetricCompactionPurging  = "convstream.compaction.purging"
	MetricPurgesHeld         = "convstream.purges.held"
	MetricSnapshotWrites     = "convstream.snapshot.writes"
	MetricSnapshotBytes      = "convstream.snapshot.bytes"
	MetricSnapshotEventBytes = "convstream.snapshot.event_bytes"
	MetricPipelineDuration   = "convstream.pipeline.duration"
	MetricProcessorDuration  = "convstream.processor.duration"
	MetricInferences         = "convstream.inference.requests"
	MetricInferenceWarnings  = "convstream.inference.warnings"
	MetricCacheBytes         = "convstream.cache.bytes"
	MetricCacheConversations = "convstream.cache.conversations"
	MetricCacheEvictions     = "convstream.cache.evictions"
	MetricLoads              = "convstream.loads"
	MetricEventsParked       = "convstream.events.parked"
	MetricDeliveryGaps       = "convstream.delivery.gaps"
	MetricEventsHealed       = "convstream.events.healed"
	MetricStorageDamaged     = "convstream.storage.damaged"
	MetricNATSAsyncErrors    = "convstream.nats.async_errors"
	MetricInferenceDuration  = "convstream.inference.duration"
	MetricDeadLetters        = "convstream.events.deadlettered"
	MetricConsumerPending    = "convstream.consumer.pending"
	MetricConsumerAckPending = "convstream.consumer.ack_pending"
	MetricNATSConnected      = "convstream.nats.connected"
	MetricNATSReconnects     = "convstream.nats.reconnects"
)

func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := mp.Meter(streams.InstrumentationName)
	var ins instruments
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{event}"))
		errs = append(errs, err)
		return c
	}
	seconds := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
		errs = append(errs, err)
		return h
	}
	ins.applied = counter(MetricEventsApplied, "Events applied: the conversation changed and a snapshot was stored.")
	ins.rejected = counter(MetricEventsRejected, "Events refused and reported on the errors subject, by reason code.")
	ins.skipped = counter(MetricEventsSkipped, "Redelivered events already applied.")
	ins.reapplied = counter(MetricEventsReapplied, "Redelivered events applied (also counted as applied): an earlier delivery was never settled (its worker died or lost its partition) or failed.")
	ins.failed = counter(MetricEventsFailed, "Event deliveries that failed transiently and will be redelivered.")
	ins.eventDuration = seconds(MetricEventDuration, "Time to handle one event delivery.")
	ins.snapshotLat = seconds(MetricSnapshotLatency, "Time from an event being stored in JetStream to its snapshot being stored.")
	ins.rebuilds = counter(MetricRebuilds, "Conversations rebuilt from the events stream.")
	ins.rebuildDuration = seconds(MetricRebuildDuration, "Time to rebuild one conversation from the events stream.")
	ins.fromCheckpoint = metric.WithAttributeSet(attribute.NewSet(attribute.String("from", "checkpoint")))
	ins.fromEvents = metric.WithAttributeSet(attribute.NewSet(attribute.String("from", "events")))
	if c, err := m.Int64Counter(MetricCheckpoints, metric.WithUnit("{checkpoint}"),
		metric.WithDescription("Conversation checkpoints, by outcome: written, failed, skipped (too large), busy (too many writes under way), stale (a later one is stored).")); err != nil {
		errs = append(errs, err)
	} else {
		ins.checkpoints = c
	}
	if c, err := m.Int64Counter(MetricCompactions, metric.WithUnit("{purge}"),
		metric.WithDescription("Purges of a conversation's events its checkpoint covers, by outcome: purged (what its consumer has acknowledged; the rest once it has, convstream.purges.held), failed (the next checkpoint's purge covers them).")); err != nil {
		errs = append(errs, err)
	} else {
		ins.compactions = c
	}
	if c, err := m.Int64Counter(MetricSnapshotWrites, metric.WithUnit("{write}"),
		metric.WithDescription("Snapshot writes to the bucket, by outcome: stored, failed (retried, or its events redelivered), conflict (another worker wrote the key), too_large and refused (no retry stores it: its events applied again, measured, or terminated).")); err != nil {
		errs = append(errs, err)
	} else {
		ins.snapshotWrites = c
	}
	bytes := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("By"))
		errs = append(errs, err)
		return c
	}
	ins.snapshotBytes = bytes(MetricSnapshotBytes, "Bytes of the snapshots stored in the bucket.")
	ins.snapshotEventBytes = bytes(MetricSnapshotEventBytes, "Bytes of the events the stored snapshots cover: against convstream.snapshot.bytes, what snapshot writes cost for the events they store.")
	for o := range ins.byWrite {
		ins.byWrite[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", writeOutcome(o).String())))
	}
	ins.pipelineDuration = seconds(MetricPipelineDuration, "Time to run one context pipeline, by pipeline and outcome.")
	ins.processorDuration = seconds(MetricProcessorDuration, "Time one processor took, by processor.")
	ins.inferences = counter(MetricInferences, "Inference requests, by outcome.")
	ins.inferenceDuration = seconds(MetricInferenceDuration, "Time from an inference request's handling to its answer: the wait for the conversation to catch up, the pipeline, the model request and the reply, by outcome.")
	ins.deadLetters = counter(MetricDeadLetters, "Events dead-lettered: delivered the most times allowed (--max-deliver) without being applied, and recorded on the errors stream.")
	if c, err := m.Int64Counter(MetricInferenceWarnings, metric.WithUnit("{warning}"),
		metric.WithDescription("Warnings of inference contexts, by format: what the format could not carry, such as a group message the spec did not flatten.")); err != nil {
		errs = append(errs, err)
	} else {
		ins.inferenceWarnings = c
	}
	if c, err := m.Int64Counter(MetricCacheEvictions, metric.WithUnit("{conversation}"),
		metric.WithDescription("Conversations the caches let go of, by reason: room (for other conversations) or unused (for --cache-ttl).")); err != nil {
		errs = append(errs, err)
	} else {
		ins.evictions = c
	}
	ins.forRoom = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "room")))
	ins.unused = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "unused")))
	ins.byType = map[string]metric.MeasurementOption{}
	for _, t := range append(streams.EventTypes(), "unknown") {
		ins.byType[t] = metric.WithAttributeSet(attribute.NewSet(attribute.String("type", t)))
	}
	for o := range ins.byOutcome {
		ins.byOutcome[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome(o).String())))
	}
	count := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return c
	}
	ins.gaps = count(MetricDeliveryGaps, "{gap}", "Breaks in a consumer's deliveries, by cause: sequence (deliveries lost by a client buffer, the network or a server, or taken by another worker pulling from the same consumer) or async_error (a NATS error on a subscription, such as a slow consumer). After each, every conversation of the consumer is checked against the stream before its next event.")
	for c := range ins.byGap {
		ins.byGap[c] = metric.WithAttributeSet(attribute.NewSet(attribute.String("cause", gapCause(c).String())))
	}
	ins.healed = count(MetricEventsHealed, "{event}", "Events that arrived before an earlier event of their conversation (lost on the way, or held by another worker): the conversation was rebuilt from the stream, the missing events included, before the event applied.")
	ins.damaged = count(MetricStorageDamaged, "{fault}", "Damaged storage the worker found, by what: consumer (a consumer whose state the server could not load; the worker waits, not ready, until it is removed or restored), events (events a stored snapshot covers missing from the events stream; the conversation is rebuilt from what it holds).")
	ins.asyncErrors = count(MetricNATSAsyncErrors, "{error}", "NATS async errors on the worker's connection, by kind: slow_consumer (messages dropped by a full client buffer) or other.")
	ins.slow = metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", "slow_consumer")))
	ins.otherAsync = metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", "other")))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ins.zero(context.Background())
	return &ins, nil
}

// gapCause is why a consumer's deliveries count a break.
type gapCause int

const (
	gapInSequence      gapCause = iota // the next delivery is not the one expected
	gapAfterAsyncError                 // a NATS async error on a subscription
	gapCauses                          // the number of causes
)

func (c gapCause) String() string { return [...]string{"sequence", "async_error"}[c] }

// deliveryGap counts a break in a consumer's deliveries.
func (ins *instruments) deliveryGap(ctx context.Context, c gapCause) {
	ins.gaps.Add(ctx, 1, ins.byGap[c])
}

// storageDamaged counts damaged storage found: what names it.
func (ins *instruments) storageDamaged(ctx context.Context, what string) {
	ins.damaged.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("what", what))))
}

// healedEvent counts an event applied after its conversation was rebuilt
// past events missing from it.
func (ins *instruments) healedEvent(ctx context.Context) { ins.healed.Add(ctx, 1) }

// asyncError counts a NATS async error, a slow consumer's or another.
func (ins *instruments) asyncError(ctx context.Context, slow bool) {
	kind := ins.otherAsync
	if slow {
		kind = ins.slow
	}
	ins.asyncErrors.Add(ctx, 1, kind)
}

// zero adds 0 to every series of the counters whose attributes are known
// in advance, so that each is exported from the start: a rate() over a
// series that appears with its first increment sees no data until then
// (TestPrometheusMetrics). Rejections by code appear with their first.
func (ins *instruments) zero(ctx context.Context) {
	for _, o := range ins.byType {
		ins.applied.Add(ctx, 0, o)
		ins.skipped.Add(ctx, 0, o)
		ins.reapplied.Add(ctx, 0, o)
		ins.failed.Add(ctx, 0, o)
	}
	ins.evictions.Add(ctx, 0, ins.forRoom)
	ins.evictions.Add(ctx, 0, ins.unused)
	ins.rebuilds.Add(ctx, 0, ins.fromCheckpoint)
	ins.rebuilds.Add(ctx, 0, ins.fromEvents)
	for _, o := range ins.byWrite {
		ins.snapshotWrites.Add(ctx, 0, o)
	}
	for _, o := range []string{"written", "failed", "skipped", "busy", "stale"} {
		ins.checkpoints.Add(ctx, 0, metric.WithAttributes(attribute.String("outcome", o)))
	}
	for _, o := range []string{"purged", "failed"} {
		ins.compactions.Add(ctx, 0, metric.WithAttributes(attribute.String("outcome", o)))
	}
	for _, o := range inferenceOutcomes {
		ins.inferences.Add(ctx, 0, metric.WithAttributes(attribute.String("outcome", o)))
	}
	ins.snapshotBytes.Add(ctx, 0)
	ins.snapshotEventBytes.Add(ctx, 0)
	ins.deadLetters.Add(ctx, 0)
	for _, o := range ins.byGap {
		ins.gaps.Add(ctx, 0, o)
	}
	ins.healed.Add(ctx, 0)
	ins.asyncErrors.Add(ctx, 0, ins.slow)
	ins.asyncErrors.Add(ctx, 0, ins.otherAsync)
}

// inferenceOutcomes are the outcomes of an inference request, as
// convstream.inference.requests and convstream.inference.duration count
// them: a context, a rejection, a pipeline failure, or busy (refused by
// admission control before any work; inference_reply.go).
var inferenceOutcomes = []string{"context", "rejected", "failed", "busy"}

func (ins *instruments) snapshotLatency(ctx context.Context, d time.Duration) {
	ins.snapshotLat.Record(ctx, d.Seconds())
}

// rebuilt counts a rebuild, from a checkpoint or from the first event.
func (ins *instruments) rebuilt(ctx context.Context, d time.Duration, fromCheckpoint bool) {
	from := ins.fromEvents
	if fromCheckpoint {
		from = ins.fromCheckpoint
	}
	ins.rebuilds.Add(ctx, 1, from)
	ins.rebuildDuration.Record(ctx, d.Seconds(), from)
}

// evicted counts a conversation let go of for room or for going unused.
func (ins *instruments) evicted(ctx context.Context, why convcache.Reason) {
	reason := ins.forRoom
	if why == convcache.Unused {
		reason = ins.unused
	}
	ins.evictions.Add(ctx, 1, reason)
}

// compacted counts a compaction's purge by outcome.
func (ins *instruments) compacted(ctx context.Context, outcome string) {
	ins.compactions.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// checkpointed counts a checkpoint by outcome.
func (ins *instruments) checkpointed(ctx context.Context, outcome string) {
	ins.checkpoints.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// writeOutcome is how a snapshot write ended, for convstream.snapshot.writes.
type writeOutcome int

const (
	writeStored writeOutcome = iota
	writeFailed
	writeConflict
	writeTooLarge
	writeRefused  // a failure no retry changes, other than the size (store_refusal.go)
	writeOutcomes // the number of outcomes
)

func (o writeOutcome) String() string {
	return [...]string{"stored", "failed", "conflict", "too_large", "refused"}[o]
}

// snapshotWritten counts a snapshot write by outcome, and when stored, its
// size and that of the events it covers.
func (ins *instruments) snapshotWritten(ctx context.Context, o writeOutcome, size, events int) {
	ins.snapshotWrites.Add(ctx, 1, ins.byWrite[o])
	if o == writeStored {
		ins.snapshotBytes.Add(ctx, int64(size))
		ins.snapshotEventBytes.Add(ctx, int64(events))
	}
}

// observeCache reports what the cached conversations weigh (see
// WithCacheBytes) and how many they are (see WithCacheConversations), and
// the conversations being loaded off their lanes and the events parked for
// them (see WithLoads), as gauges.
func (w *Worker) observeCache(mp metric.MeterProvider) error {
	m := mp.Meter(streams.InstrumentationName)
	for _, g := range []struct {
		name, description, unit string
		read                    func() int64
	}{
		{MetricCacheBytes, "Estimated memory of the conversations cached, against --cache-bytes.", "By", w.CacheBytes},
		{MetricCacheConversations, "Conversations cached, against --cache-conversations.", "{conversation}", w.CachedConversations},
		{MetricLoads, "Conversations being loaded off their lanes, --loads at once, the others waiting for a slot.",
			"{conversation}", w.loads.loading.Load},
		{MetricEventsParked, "Events waiting on their lanes for their conversation to be loaded.", "{event}", w.loads.parked.Load},
	} {
		_, err := m.Int64ObservableGauge(g.name, metric.WithDescription(g.description), metric.WithUnit(g.unit),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(g.read())
				return nil
			}))
		if err != nil {
			return err
		}
	}
	return nil
}
