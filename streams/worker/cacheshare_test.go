package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// TestCacheShare checks how two caches share a budget of four
// conversations: a cache over it asks the one holding the oldest state to
// trim rather than drop its own newer ones, goes over by the slack (one)
// until the trim has run, and drops its own past the slack or when no
// other cache holds anything older.
func TestCacheShare(t *testing.T) {
	s := newCacheShare(4, 0)
	var queued []func()
	s.post = func(_ int, fn func()) bool {
		queued = append(queued, fn)
		return true
	}
	runQueued := func() {
		for len(queued) > 0 {
			fn := queued[0]
			queued = queued[1:]
			fn()
		}
	}
	var evicted []string
	release := func(st *convState, why letReason) {
		if why == letForRoom {
			evicted = append(evicted, st.id)
		}
	}
	a, b := s.add(nil, release), s.add(nil, release)
	ids := func(c *lru) []string {
		var out []string
		c.each(func(st *convState) { out = append(out, st.id) })
		slices.Sort(out)
		return out
	}
	put := func(c *lru, id string) { c.put(&convState{id: id}) }
	check := func(step string, wantA, wantB, wantEvicted []string, wantQueued int) {
		t.Helper()
		if got := ids(a); !slices.Equal(got, wantA) {
			t.Errorf("%s: cache a holds %v, want %v", step, got, wantA)
		}
		if got := ids(b); !slices.Equal(got, wantB) {
			t.Errorf("%s: cache b holds %v, want %v", step, got, wantB)
		}
		if !slices.Equal(evicted, wantEvicted) {
			t.Errorf("%s: evicted %v, want %v", step, evicted, wantEvicted)
		}
		if len(queued) != wantQueued {
			t.Errorf("%s: %d trims queued, want %d", step, len(queued), wantQueued)
		}
		if n := int64(len(ids(a)) + len(ids(b))); s.convs.Load() != n {
			t.Errorf("%s: the share counts %d conversations, the caches hold %d", step, s.convs.Load(), n)
		}
	}

	put(a, "a1")
	put(a, "a2")
	put(b, "b1")
	put(b, "b2")
	check("at the budget", []string{"a1", "a2"}, []string{"b1", "b2"}, nil, 0)

	put(b, "b3")
	check("one over: a asked to trim", []string{"a1", "a2"}, []string{"b1", "b2", "b3"}, nil, 1)
	put(b, "b4")
	check("past the slack: b drops its own", []string{"a1", "a2"}, []string{"b2", "b3", "b4"}, []string{"b1"}, 1)
	runQueued()
	check("a trimmed", []string{"a2"}, []string{"b2", "b3", "b4"}, []string{"b1", "a1"}, 0)
	if a.trimQueued.Load() {
		t.Error("a's trim is still marked queued after it ran")
	}

	a.get("a2") // now the most recent of all
	put(b, "b5")
	check("a holds nothing older: b drops its own", []string{"a2"}, []string{"b3", "b4", "b5"}, []string{"b1", "a1", "b2"}, 0)

	// b holds the oldest (b3), but a trim cannot be queued (its lane is
	// busy): a drops its own.
	s.post = func(int, func()) bool { return false }
	put(a, "a3")
	check("no room to ask", []string{"a3"}, []string{"b3", "b4", "b5"}, []string{"b1", "a1", "b2", "a2"}, 0)
}

// TestCacheTotalCountsLossesAtOnce replays, on one goroutine, two lanes
// sharing a byte budget: b is part way through evicting when a grows. a
// sees b's loss in the share and keeps its growth, so the reported total
// must already hold b's loss, or a reader would see both lanes' peaks at
// once, over the budget.
func TestCacheTotalCountsLossesAtOnce(t *testing.T) {
	var total atomic.Int64
	s := newCacheShare(100, 300)
	a, b := s.add(&total, nil), s.add(&total, nil)
	// With no conversation, 12 bytes of derived JSON weigh 96 (see weight).
	put := func(c *lru, id string) { c.put(&convState{id: id, flatJSON: flatJSON{bytes: 12}}) }
	if w := (&convState{flatJSON: flatJSON{bytes: 12}}).weight(); w != 96 {
		t.Fatalf("a state of 12 derived bytes weighs %d", w)
	}
	put(b, "b1")
	put(b, "b2")
	put(a, "a1")
	if total.Load() != 288 {
		t.Fatalf("total %d after three states of 96, want 288", total.Load())
	}
	st := b.remove(b.order.Back()) // b evicting, not yet reported
	if st.id != "b1" {
		t.Fatalf("b evicted %s, want b1", st.id)
	}
	put(a, "a2") // within the budget again: a keeps it
	if got, held := total.Load(), s.bytes.Load(); got != held || got > 300 {
		t.Errorf("total %d while the caches hold %d (budget 300)", got, held)
	}
	b.report()
	if total.Load() != 288 {
		t.Errorf("total %d after b reported, want 288", total.Load())
	}
}

// TestCacheGauges drives more conversations than the cache holds through
// two lanes: the conversations gauge reports what the lanes hold, within
// the bound and its slack, the bytes gauge what they weigh, and the
// evictions counter the others.
func TestCacheGauges(t *testing.T) {
	const limit, convs = 4, 9
	ns := startServer(t, "")
	nc := connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := startWorker(t, nc, WithCacheConversations(limit), WithLanes(2),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := newClient(t, nc)
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
	checkStored(t, c, want, 30*time.Second)

	var held int64
	var mu sync.Mutex
	if err := r.w.lanes.callAll(ctx, func(l *lane) {
		mu.Lock()
		held += int64(l.cache.len())
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	rm := collect(t, reader)
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
	if got := gauges[MetricCacheBytes]; got <= 0 || got != r.w.CacheBytes() {
		t.Errorf("%s = %d, CacheBytes %d", MetricCacheBytes, got, r.w.CacheBytes())
	}
}
