package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker/internal/convcache"
)

// TestCacheBytes drives conversations whose messages weigh about 5 times
// the worker's byte budget: what the cache holds stays within the budget,
// give or take the slack the lanes share (sampled while events flow);
// evicted conversations are stored first and rebuilt when their next event
// comes, and every conversation ends equal to Parse of its messages.
func TestCacheBytes(t *testing.T) {
	const (
		budget = 256 << 10
		convs  = 60
		rounds = 12
	)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithCacheBytes(budget), WithLanes(2))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if b := r.W.CacheBytes(); b > peak.Load() {
				peak.Store(b)
			}
		}
	}()
	content := strings.Repeat("all work and no play ", 80) // 1,680 bytes
	want := map[string]*conversation.Conversation{}
	jsonBytes := 0
	for k := range rounds {
		for i := range convs {
			conv := fmt.Sprintf("cb%02d", i)
			if want[conv] == nil {
				want[conv] = conversation.NewConversation()
			}
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": []string{"user", "assistant"}[k%2], "content": content, "parentId": nil}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := want[conv].Append(m); err != nil {
				t.Fatal(err)
			}
			raw, _ := m.JSON()
			jsonBytes += len(raw)
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	natstest.CheckStored(t, c, want, 30*time.Second)
	close(stop)
	<-sampled
	// The lanes share the budget: until a lane holding older conversations
	// has trimmed, the caches may hold a thirty-second more, and a lane
	// holding only the conversation in use keeps it (see convcache.Share).
	var (
		mu      sync.Mutex // the lanes run at once
		largest int64
	)
	if err := r.W.lanes.callAll(ctx, func(l *lane) {
		l.cache.EachHeld(func(_ *convState, h convcache.Held) {
			mu.Lock()
			largest = max(largest, h.Weight)
			mu.Unlock()
		})
	}); err != nil {
		t.Fatal(err)
	}
	bound := int64(budget + budget/32 + 2*largest)
	if p := peak.Load(); p > bound {
		t.Errorf("the cache weighed %d bytes at its peak, over the budget of %d plus its slack and one conversation a lane (%d)", p, budget, bound)
	}
	t.Logf("%d conversations, %d bytes of messages' JSON; cache budget %d (bound %d), peak %d, now %d",
		convs, jsonBytes, budget, bound, peak.Load(), r.W.CacheBytes())
}

// TestSweepPlan checks how often the caches are swept and after how many
// sweeps a conversation is compacted and let go.
func TestSweepPlan(t *testing.T) {
	for _, tc := range []struct {
		idle, ttl       time.Duration
		period          time.Duration
		compact, expire uint32
	}{
		{0, 0, 0, 0, 0},
		{time.Minute, 0, 30 * time.Second, 3, 0},
		{time.Minute, 30 * time.Minute, 30 * time.Second, 3, 61},
		{0, 10 * time.Minute, 5 * time.Minute, 0, 3},
		{time.Minute, 45 * time.Second, 22500 * time.Millisecond, 4, 3},
		{time.Microsecond, 0, time.Millisecond, 2, 0},
	} {
		period, compact, expire := cacheConfig{idle: tc.idle, ttl: tc.ttl}.sweepPlan()
		if period != tc.period || compact != tc.compact || expire != tc.expire {
			t.Errorf("idle %v, TTL %v: every %v, compact after %d, let go after %d; want %v, %d, %d",
				tc.idle, tc.ttl, period, compact, expire, tc.period, tc.compact, tc.expire)
		}
	}
}

// TestStoredStatesAtRest: once every event of a conversation is stored, its
// state holds no store state, and the cache counts it at its weight
// without one; the next events make a new one and are stored too.
func TestStoredStatesAtRest(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithCacheIdle(0), WithLanes(2), WithSnapshotInterval(10*time.Millisecond))
	c := natstest.NewClient(t, nc)
	send, want := chainedSender(t, c)
	const convs = 6
	atRest := func() bool {
		rest := 0
		eachCached(t, r.W, func(st *convState, h convcache.Held) {
			if st.store == nil && h.Weight == st.weight() {
				rest++
			}
		})
		return rest == convs
	}
	for round := range 2 {
		sendRounds(send, "rest", convs, 3*round, 3*round+3)
		natstest.CheckStored(t, c, want, 10*time.Second)
		natstest.WaitFor(t, 10*time.Second, "every state at rest, without a store state", atRest)
	}
}

// TestIdleConversationsCompacted runs a worker that compacts conversations
// unused for 100 ms: they are compacted once quiet and stored, and their
// next events still give snapshots equal to Parse (stored on new timers).
func TestIdleConversationsCompacted(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithCacheIdle(100*time.Millisecond), WithLanes(2), WithSnapshotInterval(10*time.Millisecond))
	c := natstest.NewClient(t, nc)
	send, want := chainedSender(t, c)
	check := func() { natstest.CheckStored(t, c, want, 10*time.Second) }
	cold := func() int { return coldStates(t, r.W) }
	const convs = 6
	sendRounds(send, "idle", convs, 0, 3)
	check()
	natstest.WaitFor(t, 10*time.Second, "every conversation compacted", func() bool { return cold() == convs })
	// Weighed again: what compaction let go of no longer counts. The store
	// state is let go too; the next events (check, below) make new ones.
	eachCached(t, r.W, func(st *convState, h convcache.Held) {
		if h.Weight != st.weight() {
			t.Errorf("%s compacted weighs %d, counted at %d", st.id, st.weight(), h.Weight)
		}
		if st.store != nil {
			t.Errorf("%s compacted keeps its store state", st.id)
		}
	})
	sendRounds(send, "idle", convs, 3, 5)
	check()
	natstest.WaitFor(t, 10*time.Second, "every conversation compacted again", func() bool { return cold() == convs })
}

// TestQuietCheckpointsWait runs a worker whose checkpoint slots are all
// taken while its conversations go quiet: the compacting sweep queues
// their checkpoints (two at most here) rather than skip them, leaves the
// rest as they are for later sweeps, and every one is written once the
// slots free up. Event compaction is off: with it, a store whose events
// outweigh what their conversation holds (three short appends) captures a
// checkpoint of its own (compactDue), which finds no free slot and is
// counted busy, a rule of busy conversations this test is not about.
func TestQuietCheckpointsWait(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithCacheIdle(100*time.Millisecond), WithLanes(1), WithSnapshotInterval(10*time.Millisecond),
		WithEventCompaction(false),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))), func(c *config) { c.checkpointsWaiting = 2 })
	for range checkpointsInFlight {
		r.W.cp.slots <- struct{}{}
	}
	c := natstest.NewClient(t, nc)
	send, want := chainedSender(t, c)
	const convs = 6
	sendRounds(send, "wait", convs, 0, 3)
	natstest.CheckStored(t, c, want, 10*time.Second)
	cold := func() int { return coldStates(t, r.W) }
	natstest.WaitFor(t, 10*time.Second, "two conversations compacted, their checkpoints queued", func() bool { return cold() == 2 })
	time.Sleep(300 * time.Millisecond) // several sweeps
	written := func() int64 { return sumWhere(natstest.Collect(t, reader), MetricCheckpoints, "outcome", "written") }
	if n, w := cold(), written(); n != 2 || w != 0 {
		t.Fatalf("with every slot taken: %d compacted, %d checkpoints written; want 2 (the queue's room) and 0", n, w)
	}
	if busy := sumWhere(natstest.Collect(t, reader), MetricCheckpoints, "outcome", "busy"); busy != 0 {
		t.Errorf("%d checkpoints counted skipped as busy; a quiet one waits", busy)
	}
	for range checkpointsInFlight - 1 {
		<-r.W.cp.slots
	}
	r.W.cp.giveSlot() // as a write finishing on the last slot: the queued ones run on it
	natstest.WaitFor(t, 10*time.Second, "every conversation compacted, each with its checkpoint written", func() bool {
		return cold() == convs && written() == convs
	})
	for id, conv := range want {
		cp, got, ok := storedCheckpoint(t, r.W, id)
		if !ok {
			t.Fatalf("no checkpoint of %s", id)
		}
		if cp.Events != 3 || got.Len() != conv.Len() {
			t.Errorf("checkpoint of %s: %d events, %d messages; want 3 and %d", id, cp.Events, got.Len(), conv.Len())
		}
	}
}

// TestUnusedConversationsLetGo runs a worker that lets go of conversations
// unused for 300 ms: each is checkpointed and leaves the cache, and its
// next events rebuild it from that checkpoint, with snapshots still equal
// to Parse.
func TestUnusedConversationsLetGo(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithCacheIdle(100*time.Millisecond), WithCacheTTL(300*time.Millisecond), WithLanes(2),
		WithSnapshotInterval(10*time.Millisecond), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	send, want := chainedSender(t, c)
	const convs = 6
	sendRounds(send, "ttl", convs, 0, 3)
	natstest.CheckStored(t, c, want, 10*time.Second)
	natstest.WaitFor(t, 10*time.Second, "every conversation let go", func() bool { return r.W.CachedConversations() == 0 })
	if got := sumWhere(natstest.Collect(t, reader), MetricCacheEvictions, "reason", "unused"); got != convs {
		t.Errorf("%d conversations counted let go for going unused, want %d", got, convs)
	}
	if b := r.W.CacheBytes(); b != 0 {
		t.Errorf("the cache weighs %d bytes with no conversation in it", b)
	}
	// A conversation goes once its checkpoint is being written; the count
	// follows when the write returns.
	natstest.WaitFor(t, 10*time.Second, "a checkpoint written for each conversation let go", func() bool {
		return sumWhere(natstest.Collect(t, reader), MetricCheckpoints, "outcome", "written") >= convs
	})
	sendRounds(send, "ttl", convs, 3, 5)
	natstest.CheckStored(t, c, want, 10*time.Second)
	rm := natstest.Collect(t, reader)
	if got := sumWhere(rm, MetricRebuilds, "from", "checkpoint"); got != convs {
		t.Errorf("%d rebuilds from a checkpoint, want one for each of the %d conversations (from events: %d)",
			got, convs, sumWhere(rm, MetricRebuilds, "from", "events"))
	}
}

// chainedSender returns a function that sends message k of conversation
// conv (see sendChained), and the conversations it sent, as Parse sees
// them.
func chainedSender(t testing.TB, c *client.Client) (func(conv string, k int), map[string]*conversation.Conversation) {
	want := map[string]*conversation.Conversation{}
	return func(conv string, k int) {
		if want[conv] == nil {
			want[conv] = conversation.NewConversation()
		}
		sendChained(t, c, want[conv], conv, k)
	}, want
}

// sendRounds sends, with send (see chainedSender), messages from to to-1 of
// conversations prefix0 to prefix(convs-1), one round of conversations
// per message.
func sendRounds(send func(conv string, k int), prefix string, convs, from, to int) {
	for k := from; k < to; k++ {
		for i := range convs {
			send(fmt.Sprintf("%s%d", prefix, i), k)
		}
	}
}

// eachCached runs fn with every state w's lanes hold and what its cache
// knows of it, on its lane.
func eachCached(t testing.TB, w *Worker, fn func(st *convState, h convcache.Held)) {
	t.Helper()
	for _, l := range w.lanes.all {
		if err := w.lanes.call(context.Background(), l, func() { l.cache.EachHeld(fn) }); err != nil {
			t.Fatal(err)
		}
	}
}

// coldStates returns how many of the states w's lanes hold are compacted.
func coldStates(t testing.TB, w *Worker) int {
	t.Helper()
	n := 0 // the lanes are called one after another
	eachCached(t, w, func(_ *convState, h convcache.Held) {
		if h.Compacted {
			n++
		}
	})
	return n
}
