package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/internal/natstest"
)

// withCompactionTiming shortens how often a worker reads the events
// stream's compaction mark, and how long after it is turned on the worker
// waits to purge.
func withCompactionTiming(poll, settle time.Duration) Option {
	return func(c *config) { c.compactionPoll, c.compactionSettle = poll, settle }
}

// TestCompactionWaitsForTheStream runs a worker with compaction on (the
// default) over an events stream an earlier release made, whose metadata
// says nothing of compaction, as after a rolling upgrade with the
// default flags: the worker checkpoints its conversations but purges no
// event, and says why. EnableEventCompaction then turns compaction on;
// the running worker reads the mark and, once it has settled, purges
// (and says so: convstream.compaction.purging 1, 0 before).
// Every conversation equals Parse throughout, and after a restart with an
// empty cache (rebuilt from checkpoints over the compacted stream).
func TestCompactionWaitsForTheStream(t *testing.T) {
	load := editLoad{convs: 4, msgs: 6, edits: 400, size: 120}
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	// The stream as a release without compaction makes it.
	if _, err := c.JetStream().CreateStream(ctx, Storage{}.streamConfig(c.Subjects())); err != nil {
		t.Fatal(err)
	}
	if mark, err := ReadEventCompaction(ctx, c.JetStream(), c.Subjects()); err != nil || mark.On {
		t.Fatalf("an earlier release's stream: %+v, %v; want off", mark, err)
	}

	reader := sdkmetric.NewManualReader()
	logged := &warnings{}
	a := StartWorker(t, nc, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithLogger(slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		withCompactionTiming(100*time.Millisecond, 2*time.Second))
	half := load.edits / 2
	want := load.want(t, half)
	last := load.publish(t, c, 0, half)
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
	natstest.WaitFor(t, time.Minute, "a checkpoint of every conversation", func() bool {
		return sumWhere(natstest.Collect(t, reader), MetricCheckpoints, "outcome", "written") >= int64(load.convs)
	})
	if n := sumWhere(natstest.Collect(t, reader), MetricCompactions, "outcome", "purged"); n != 0 {
		t.Errorf("%d purges of an earlier release's stream, want none", n)
	}
	if g := gauge(natstest.Collect(t, reader), MetricCompactionPurging); g != 0 {
		t.Errorf("%s %d on an earlier release's stream, want 0", MetricCompactionPurging, g)
	}
	sent := uint64(load.convs * (load.msgs + half))
	if _, msgs := eventsBytes(t, c); msgs != sent {
		t.Errorf("the stream holds %d events, want the %d sent", msgs, sent)
	}
	said := false
	for _, line := range logged.all() {
		said = said || strings.Contains(line, "convctl compaction --enable")
	}
	if !said {
		t.Errorf("the worker did not say why it compacts nothing; it logged %q", logged.all())
	}

	mark, err := EnableEventCompaction(ctx, c.JetStream(), c.Subjects())
	if err != nil || !mark.On || mark.Since.IsZero() {
		t.Fatalf("EnableEventCompaction: %+v, %v", mark, err)
	}
	if again, err := EnableEventCompaction(ctx, c.JetStream(), c.Subjects()); err != nil || again != mark {
		t.Errorf("enabled again: %+v, %v; want it left as %+v", again, err, mark)
	}
	natstest.WaitFor(t, 30*time.Second, "the worker to read the mark", func() bool { return a.W.cp.compacting() })
	natstest.WaitFor(t, 30*time.Second, "the mark to settle", func() bool {
		return gauge(natstest.Collect(t, reader), MetricCompactionPurging) == 1
	})

	want = load.want(t, load.edits)
	last = load.publish(t, c, half, load.edits)
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
	natstest.WaitFor(t, time.Minute, "purges", func() bool {
		return sumWhere(natstest.Collect(t, reader), MetricCompactions, "outcome", "purged") > 0
	})
	a.Stop(t)
	if _, msgs := eventsBytes(t, c); msgs >= uint64(load.convs*(load.msgs+load.edits)) {
		t.Errorf("the stream holds %d events once compaction is on, as many as were sent", msgs)
	}

	// An empty cache: rebuilt from the checkpoints over what is left.
	StartWorker(t, nc)
	last = appendOneMore(t, c, want, "after-restart")
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
}

// TestCompactionMarkOfANewStream: a stream this release makes says it
// may be compacted from the start, and a mark once on stays on.
func TestCompactionMarkOfANewStream(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	w := provisionedWorker(t, nc)
	mark, err := ReadEventCompaction(context.Background(), w.js, w.cfg.subjects)
	if err != nil || !mark.On || !mark.Since.IsZero() || !mark.PurgesFrom().IsZero() {
		t.Fatalf("a new stream: %+v, %v; want on since its creation", mark, err)
	}
	c := newCompactor(w.stream, nil, nil, true, 1, w.metrics, w.cfg.logger, mark)
	if !c.purging(time.Now()) {
		t.Error("a worker does not purge a new stream")
	}
	c.setMark(EventCompaction{})
	if !c.on() {
		t.Error("a mark once on went off")
	}
	for _, v := range []string{"", "off", "on yesterday", "On"} {
		if got := compactionOf(map[string]string{CompactionMetadataKey: v}); got.On {
			t.Errorf("mark %q read as on", v)
		}
	}
	since := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	on := EventCompaction{On: true, Since: since}
	if got := compactionOf(map[string]string{CompactionMetadataKey: on.String()}); got != on {
		t.Errorf("mark %q read as %+v", on.String(), got)
	}
	c = newCompactor(w.stream, nil, nil, true, 1, w.metrics, w.cfg.logger, on)
	if c.purging(since.Add(CompactionSettle-time.Second)) || !c.purging(since.Add(CompactionSettle)) {
		t.Errorf("purging before or not after %v settled", CompactionSettle)
	}
	c.purge = false
	if c.purging(since.Add(time.Hour)) || !c.on() {
		t.Error("a worker with compaction off purges, or does not follow the rules of a compacted stream")
	}
}
