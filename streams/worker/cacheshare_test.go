package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestCacheGauges drives more conversations than the cache holds through
// two lanes: the conversations gauge reports what the lanes hold, within
// the bound and its slack, the bytes gauge what they weigh, and the
// evictions counter the others.
func TestCacheGauges(t *testing.T) {
	const limit, convs = 4, 9
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithCacheConversations(limit), WithLanes(2),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	want := map[string]*conversation.Conversation{}
	for i := range convs {
		conv := fmt.Sprintf("g%d", i)
		data := map[string]any{"id": "m0", "role": "user", "content": "hello", "parentId": nil}
		m, err := conversation.NewMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		want[conv] = conversation.NewConversation()
		if err := want[conv].Append(m); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, data); err != nil {
			t.Fatal(err)
		}
	}
	natstest.CheckStored(t, c, want, 30*time.Second)

	var held int64
	var mu sync.Mutex
	if err := r.W.lanes.callAll(ctx, func(l *lane) {
		mu.Lock()
		held += int64(l.cache.Len())
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	rm := natstest.Collect(t, reader)
	if got := sumWhere(rm, MetricCacheEvictions, "reason", "room"); got != convs-held {
		t.Errorf("%d conversations counted evicted for room; %d went through a cache holding %d", got, convs, held)
	}
	gauges := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && len(g.DataPoints) == 1 {
				gauges[m.Name] = g.DataPoints[0].Value
			}
		}
	}
	if got := gauges[MetricCacheConversations]; got != held || got < 1 || got > limit+1 {
		t.Errorf("%s = %d; the lanes hold %d (bound %d, slack 1)", MetricCacheConversations, got, held, limit)
	}
	if got := gauges[MetricCacheBytes]; got <= 0 || got != r.W.CacheBytes() {
		t.Errorf("%s = %d, CacheBytes %d", MetricCacheBytes, got, r.W.CacheBytes())
	}
}
