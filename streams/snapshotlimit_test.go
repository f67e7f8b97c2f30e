package streams

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestSnapshotOverLimitInBucket: a snapshot whose flat list fits
// MaxSnapshotBytes but whose stored form (flat list and context tree) does
// not is not stored; its events still take effect (their deltas are out)
// and are acknowledged, the bucket keeps the last snapshot that fitted,
// and the write counts as too_large.
func TestSnapshotOverLimitInBucket(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := startWorker(t, nc, WithSnapshotInterval(0), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithLimits(Limits{MaxEventBytes: DefaultMaxEventBytes, MaxMessages: DefaultMaxMessages, MaxSnapshotBytes: 2000}))
	c := newClient(t, nc)
	ctx := context.Background()
	const conv = "big"
	deltas := record(t, nc, r.w.cfg.subjects.Snapshots(conv))
	// A message adds about 50 bytes to the flat list and 40 to the stored
	// snapshot's context tree: 32 make a snapshot of about 2,850 bytes,
	// whose flat list is under 2,000.
	const msgs = 32
	var first *Snapshot
	var last *Sent
	for i := range msgs {
		data := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": "x"}
		if i > 0 {
			data["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		sent, err := c.Send(ctx, conv, TypeMessageAppended, data)
		if err != nil {
			t.Fatal(err)
		}
		last = sent
		if i == 0 {
			// Stored before the rest are sent: the rest could otherwise be
			// applied before the first store runs, which would then be of
			// all 32 and over the limit.
			first = waitCaughtUp(t, c, conv, 10*time.Second)
		}
	}
	writes := func(outcome string) int64 {
		return sumWhere(collect(t, reader), MetricSnapshotWrites, "outcome", outcome)
	}
	waitFor(t, 10*time.Second, "every delta", func() bool { return deltas.count(r.w.cfg.subjects.Snapshots(conv)) == msgs })
	waitFor(t, 10*time.Second, "a write counted too large", func() bool { return writes("too_large") > 0 })

	cons, err := r.w.js.Consumer(ctx, r.w.cfg.subjects.EventsStream(), r.w.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every event acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	stored, err := c.Snapshot(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored at version %d of %d; writes: %d stored, %d too large", stored.Version, last.Sequence, writes("stored"), writes("too_large"))
	if stored.Version >= last.Sequence || stored.Version < first.Version {
		t.Errorf("stored snapshot at version %d, want the last that fitted, from %d and before %d", stored.Version, first.Version, last.Sequence)
	}
	if writes("stored") == 0 {
		t.Error("no write counted stored")
	}
	if n := writes("failed") + writes("conflict"); n != 0 {
		t.Errorf("%d writes counted failed or in conflict", n)
	}
}
