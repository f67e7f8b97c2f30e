package worker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// A worker purges events only from an events stream whose every worker
// knows compaction's rules (checkpoint_compact.go). A release without
// compaction writes checkpoints with plain puts, which can put one back
// behind purged events, and replays a conversation from its first event
// whenever it sets a checkpoint aside: beside a compacting worker it would
// rebuild conversations without the purged events. A rolling upgrade from
// such a release with this one's defaults would do just that.
//
// So the events stream says whether it may be compacted, in its metadata
// (CompactionMetadataKey): a stream this release creates says so from the
// start; one an earlier release made says nothing, and its workers do not
// purge until an operator turns compaction on (EnableEventCompaction,
// `convctl compaction --enable`) once every worker runs this release.
// Workers read the mark when they start and every compactionPoll after,
// until they have seen it on for CompactionSettle: a worker started before
// the mark was set follows the rules from its next read on, and none
// purges before every worker has had time to read it
// (TestCompactionWaitsForTheStream).

// CompactionMetadataKey is the key of the events stream's metadata that
// says it may be compacted: "on" since the stream was created, or "on
// TIME" (RFC 3339) since EnableEventCompaction turned it on.
const CompactionMetadataKey = "convstream.compaction"

// CompactionSettle is how long after compaction is turned on on an events
// stream (EnableEventCompaction) its workers begin to purge: four of their
// reads of the mark, with room for their clocks to differ.
const CompactionSettle = time.Minute

// compactionPoll is how often a worker reads the events stream's mark
// while it is not settled.
const compactionPoll = 15 * time.Second

// EventCompaction is what an events stream says of compaction.
type EventCompaction struct {
	// On: the stream may be compacted, and every worker follows
	// compaction's rules on it (those with compaction off too).
	On bool `json:"on"`
	// Since is when EnableEventCompaction turned it on; zero when it has
	// been on since the stream was created.
	Since time.Time `json:"since,omitzero"`
}

// PurgesFrom is when workers with compaction on begin to purge: Since
// plus CompactionSettle; zero when on since the stream was created.
func (e EventCompaction) PurgesFrom() time.Time {
	if e.Since.IsZero() {
		return time.Time{}
	}
	return e.Since.Add(CompactionSettle)
}

// String is the mark's metadata value ("" when off).
func (e EventCompaction) String() string {
	switch {
	case !e.On:
		return ""
	case e.Since.IsZero():
		return "on"
	}
	return "on " + e.Since.UTC().Format(time.RFC3339)
}

// compactionOf reads the mark in an events stream's metadata. A value it
// does not know counts as off: it purges nothing.
func compactionOf(metadata map[string]string) EventCompaction {
	v, ok := metadata[CompactionMetadataKey]
	if !ok {
		return EventCompaction{}
	}
	if v == "on" {
		return EventCompaction{On: true}
	}
	at, found := strings.CutPrefix(v, "on ")
	if !found {
		return EventCompaction{}
	}
	since, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return EventCompaction{}
	}
	return EventCompaction{On: true, Since: since}
}

// ReadEventCompaction returns what the events stream of s says of
// compaction.
func ReadEventCompaction(ctx context.Context, js jetstream.JetStream, s streams.Subjects) (EventCompaction, error) {
	stream, err := js.Stream(ctx, s.EventsStream())
	if err != nil {
		return EventCompaction{}, fmt.Errorf("worker: events stream %s: %w", s.EventsStream(), err)
	}
	return compactionOf(stream.CachedInfo().Config.Metadata), nil
}

// EnableEventCompaction turns compaction on on the events stream of s, an
// earlier release's, from now: its workers with compaction on purge from
// CompactionSettle on. Run it once every worker runs a release with
// compaction: a worker of an earlier one would rebuild conversations
// without the events purged. A stream already on is left as it is. It
// returns what the stream says afterwards.
func EnableEventCompaction(ctx context.Context, js jetstream.JetStream, s streams.Subjects) (EventCompaction, error) {
	stream, err := js.Stream(ctx, s.EventsStream())
	if err != nil {
		return EventCompaction{}, fmt.Errorf("worker: events stream %s: %w", s.EventsStream(), err)
	}
	cfg := stream.CachedInfo().Config
	if mark := compactionOf(cfg.Metadata); mark.On {
		return mark, nil
	}
	mark := EventCompaction{On: true, Since: time.Now().UTC().Truncate(time.Second)}
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[CompactionMetadataKey] = mark.String()
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return EventCompaction{}, fmt.Errorf("worker: events stream %s: turn compaction on: %w", s.EventsStream(), err)
	}
	return mark, nil
}

// watchCompaction keeps c's mark up to date from the events stream's
// metadata until it is on and settled, or ctx ends. It logs the mark's
// changes to log.
func (c *compactor) watchCompaction(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(c.poll)
	defer t.Stop()
	for !c.settled(time.Now()) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		info, err := c.stream.Info(ctx)
		if err != nil {
			log.DebugContext(ctx, "events stream's compaction mark not read", "err", err)
			continue
		}
		mark := compactionOf(info.Config.Metadata)
		if was := c.setMark(mark); !was.On && mark.On {
			log.InfoContext(ctx, "events stream compaction turned on: this worker follows its rules", "since", mark.Since,
				"purges", c.purge, "purges_from", mark.PurgesFrom())
		}
	}
}

// observeCompaction reports whether the worker purges the events its
// checkpoints cover, as a gauge: 0 with compaction off, on an events
// stream that does not say it may be compacted, or before the mark has
// settled.
func (w *Worker) observeCompaction(mp metric.MeterProvider) error {
	_, err := mp.Meter(streams.InstrumentationName).Int64ObservableGauge(MetricCompactionPurging,
		metric.WithDescription("1 while this worker purges the events its checkpoints cover; 0 with compaction off, or on an events stream not marked for it (convctl compaction --enable)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			var v int64
			if w.compaction.Load().purging(time.Now()) {
				v = 1
			}
			o.Observe(v)
			return nil
		}))
	return err
}
