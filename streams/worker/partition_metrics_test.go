package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// lockedBuffer is a buffer safe for the handlers of several goroutines.
type lockedBuffer = natstest.SyncBuffer

// TestPartitionsObserved: a worker on 2 partitions reports owning both
// (convstream.partitions.owned), counts their acquisition
// (convstream.partitions.changes), and every line it logs names it
// (worker_id, the id it has in the members bucket).
func TestPartitionsObserved(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	var logs lockedBuffer
	r := StartWorker(t, nc, WithStorage(Storage{Partitions: 2}), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	send, _ := chainedSender(t, c)
	sendRounds(send, "observed", 20, 0, 1)
	natstest.WaitFor(t, 30*time.Second, "both partitions acquired", func() bool {
		return sumWhere(natstest.Collect(t, reader), MetricPartitionsChanges, "change", "acquired") == 2
	})
	rm := natstest.Collect(t, reader)
	owned := int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == MetricPartitionsOwned && len(g.DataPoints) == 1 {
				owned = g.DataPoints[0].Value
			}
		}
	}
	if owned != 2 {
		t.Errorf("%s: %d, want 2", MetricPartitionsOwned, owned)
	}
	r.Stop(t)
	lines := logs.Lines()
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec["worker_id"] != r.W.id || r.W.id == "" {
			t.Errorf("log line without the worker's id %q: %s", r.W.id, line)
		}
	}
	if len(lines) < 3 {
		t.Errorf("%d log lines; want the start, the partitions acquired, the stop", len(lines))
	}
}

// TestPartitionLagObserved: on a partitioned stream, the consumer lag
// gauge (convstream.consumer.pending) has a series for each partition's
// consumer, labelled with its partition, whose value is the events of that
// partition the worker has yet to take: with the worker stopped, 4 events
// of a conversation of partition 0 and 2 of one of partition 1 show as 4
// and 2, and partition 2 as 0; the worker started again takes them and
// every partition's lag drops to 0.
func TestPartitionLagObserved(t *testing.T) {
	const partitions = 3
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	storage := WithStorage(Storage{Partitions: partitions})
	r := StartWorker(t, nc, storage, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	// A conversation of each of partitions 0 and 1.
	convOf := map[int]string{}
	for i := 0; len(convOf) < 2; i++ {
		id := fmt.Sprintf("lag-%d", i)
		if p := streams.PartitionOf(id, partitions); p < 2 && convOf[p] == "" {
			convOf[p] = id
		}
	}
	r.Stop(t)
	ctx := context.Background()
	for p, n := range map[int]int{0: 4, 1: 2} {
		for i := range n {
			msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": "x", "parentId": nil, "createdAt": float64(i)}
			if i > 0 {
				msg["parentId"] = fmt.Sprintf("m%d", i-1)
			}
			if _, err := c.Send(ctx, convOf[p], streams.TypeMessageAppended, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	lag := func(rm metricdata.ResourceMetrics) map[string]int64 {
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				g, ok := m.Data.(metricdata.Gauge[int64])
				if !ok || m.Name != MetricConsumerPending {
					continue
				}
				for _, dp := range g.DataPoints {
					p, _ := dp.Attributes.Value("partition")
					out[p.AsString()] = dp.Value
				}
			}
		}
		return out
	}
	want := map[string]int64{"0": 4, "1": 2, "2": 0}
	var got map[string]int64
	natstest.WaitFor(t, 30*time.Second, "the lag of each partition", func() bool {
		got = lag(natstest.Collect(t, reader))
		return maps.Equal(got, want)
	})

	reader2 := sdkmetric.NewManualReader()
	StartWorker(t, natstest.Connect(t, ns), storage, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader2))))
	want = map[string]int64{"0": 0, "1": 0, "2": 0}
	natstest.WaitFor(t, 30*time.Second, "every partition caught up", func() bool {
		got = lag(natstest.Collect(t, reader2))
		return maps.Equal(got, want)
	})
}
