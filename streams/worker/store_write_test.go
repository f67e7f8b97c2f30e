package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestCoalescedStore sends a burst of appends to one conversation with a
// long snapshot interval: every event publishes its delta, the bucket is
// written at most once per interval yet ends at the last version, and a
// graceful stop right after a burst stores what is pending.
func TestCoalescedStore(t *testing.T) {
	const interval = 300 * time.Millisecond
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	deltas := natstest.Record(t, nc, "convstream.snapshots.>")
	r := StartWorker(t, nc, WithSnapshotInterval(interval))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	kv := snapshotBucket(t, c)

	live := conversation.NewConversation()
	send := func(n, from int) {
		for i := from; i < from+n; i++ {
			sendChained(t, c, live, "burst", i)
		}
	}
	start := time.Now()
	send(40, 0)
	natstest.WaitFor(t, 10*time.Second, "40 deltas", func() bool { return deltas.Count("") >= 40 })
	snap := natstest.WaitCaughtUp(t, c, "burst", 10*time.Second)
	elapsed := time.Since(start)
	want, err := live.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, want); d != "" {
		t.Fatalf("stored snapshot differs from Parse: %s", d)
	}
	e, err := kv.Get(ctx, "burst")
	if err != nil {
		t.Fatal(err)
	}
	// Revisions of the bucket's stream count every write of any key: here,
	// only this conversation's.
	writes := e.Revision()
	if max := uint64(elapsed/interval) + 1; writes > max {
		t.Errorf("%d stores in %v, want at most %d (one per %v)", writes, elapsed, max, interval)
	}
	t.Logf("40 events, %d deltas, %d stores in %v", deltas.Count(""), writes, elapsed)

	// A burst then a graceful stop: the last version is stored by the stop.
	send(10, 40)
	natstest.WaitFor(t, 10*time.Second, "50 deltas", func() bool { return deltas.Count("") >= 50 })
	r.Stop(t)
	s, err := c.Snapshot(ctx, "burst")
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != 50 {
		t.Fatalf("after stop: stored version %d, want 50", s.Version)
	}
	if want, err = live.Result(); err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, s, want); d != "" {
		t.Fatalf("stored snapshot after stop differs from Parse: %s", d)
	}

	// The deltas, applied in order, give the stored flatList.
	v := &streams.View{}
	for _, rec := range deltas.All() {
		natstest.CheckEvent(t, rec.Event)
		var d streams.SnapshotDelta
		if err := json.Unmarshal(rec.Event.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if !v.Apply(&d) {
			t.Fatalf("delta %d (base %d, from %d) does not follow version %d", d.Version, d.BaseVersion, d.From, v.Version)
		}
		if d.Version > 1 && (d.From != int(d.Version)-1 || len(d.FlatList) != 1) {
			t.Errorf("append %d: delta from %d with %d entries, want the one new entry", d.Version, d.From, len(d.FlatList))
		}
	}
	got, _ := json.Marshal(v.FlatList)
	if string(got) != string(s.FlatList) {
		t.Errorf("deltas applied:\n%s\nstored:\n%s", got, s.FlatList)
	}
}

// snapshotBucket returns the snapshot bucket c reads, to count its
// revisions (every write is one).
func snapshotBucket(t testing.TB, c *client.Client) jetstream.KeyValue {
	t.Helper()
	kv, err := c.JetStream().KeyValue(context.Background(), c.Subjects().SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// sendChained sends message i of a chain (m0 <- m1 <- ...) to conversation
// conv and appends it to live, the conversation the worker should hold; it
// returns what the publish acknowledged.
func sendChained(t testing.TB, c *client.Client, live *conversation.Conversation, conv string, i int) *client.Sent {
	t.Helper()
	return sendChainedAs(t, c, live, conv, i, "user", fmt.Sprintf("message %d", i))
}

// sendChainedAs is sendChained with the message's role and content given.
func sendChainedAs(t testing.TB, c *client.Client, live *conversation.Conversation, conv string, i int, role, content string) *client.Sent {
	t.Helper()
	m := map[string]any{"id": fmt.Sprintf("m%d", i), "role": role, "content": content}
	if i > 0 {
		m["parentId"] = fmt.Sprintf("m%d", i-1)
	}
	sent, err := c.Send(context.Background(), conv, streams.TypeMessageAppended, m)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := conversation.NewMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Append(msg); err != nil {
		t.Fatal(err)
	}
	return sent
}

// TestDiffFlat checks the delta of a flat list against its predecessor:
// identical pointers and identical JSON are kept, the tail from the first
// difference is carried.
func TestDiffFlat(t *testing.T) {
	msg := func(id, content string) *conversation.Message {
		m, err := conversation.NewMessage(map[string]any{"id": id, "role": "user", "content": content})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := msg("a", "x"), msg("b", "y"), msg("c", "z")
	bSame := msg("b", "y")
	bEdit := msg("b", "edited")
	for _, tc := range []struct {
		name            string
		old, cur        []*conversation.Message
		from, len, keep int
	}{
		{"append", []*conversation.Message{a, b}, []*conversation.Message{a, b, c}, 2, 1, 0},
		{"same JSON, new pointer", []*conversation.Message{a, b}, []*conversation.Message{a, bSame, c}, 2, 1, 0},
		{"edit", []*conversation.Message{a, b, c}, []*conversation.Message{a, bEdit, c}, 1, 1, 1},
		{"edit the last", []*conversation.Message{a, b}, []*conversation.Message{a, bEdit}, 1, 1, 0},
		{"remove from the middle", []*conversation.Message{a, b, c}, []*conversation.Message{a, c}, 1, 0, 1},
		{"insert in the middle", []*conversation.Message{a, c}, []*conversation.Message{a, b, c}, 1, 1, 1},
		{"truncate", []*conversation.Message{a, b, c}, []*conversation.Message{a}, 1, 0, 0},
		{"unchanged", []*conversation.Message{a, b}, []*conversation.Message{a, b}, 2, 0, 0},
		{"first", nil, []*conversation.Message{a, b}, 0, 2, 0},
	} {
		d, err := diffFlat(tc.old, tc.cur)
		if err != nil {
			t.Fatal(err)
		}
		if d.from != tc.from || len(d.tail) != tc.len || d.keep != tc.keep {
			t.Errorf("%s: from %d with %d entries keeping %d, want %d with %d keeping %d", tc.name, d.from, len(d.tail), d.keep, tc.from, tc.len, tc.keep)
		}
	}
}

// TestLargeSnapshotStoredLessOften appends slowly to a conversation whose
// snapshot is large against its events: each event publishes its delta at
// once, but the snapshot waits for the maximum interval instead of being
// written again at every (short) interval (storeAmplification).
func TestLargeSnapshotStoredLessOften(t *testing.T) {
	const interval, maxInterval = 10 * time.Millisecond, time.Second
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	deltas := natstest.Record(t, nc, "convstream.snapshots.>")
	StartWorker(t, nc, WithSnapshotInterval(interval), WithSnapshotMaxInterval(maxInterval))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	kv := snapshotBucket(t, c)
	live := conversation.NewConversation()
	send := func(i int) { sendChained(t, c, live, "large", i) }
	const large, slow = 300, 20
	for i := range large {
		send(i)
	}
	natstest.WaitCaughtUp(t, c, "large", 10*time.Second)
	before, err := kv.Get(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := large; i < large+slow; i++ {
		send(i)
		time.Sleep(3 * interval)
	}
	natstest.WaitFor(t, 10*time.Second, "every delta", func() bool { return deltas.Count("") >= large+slow })
	snap := natstest.WaitCaughtUp(t, c, "large", 10*time.Second)
	elapsed := time.Since(start)
	after, err := kv.Get(ctx, "large")
	if err != nil {
		t.Fatal(err)
	}
	want, err := live.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, want); d != "" {
		t.Fatalf("stored snapshot differs from Parse: %s", d)
	}
	// Every write of the bucket is a revision: here, only this key's.
	writes := after.Revision() - before.Revision()
	if limit := uint64(elapsed/maxInterval) + 2; writes > limit {
		t.Errorf("%d snapshots of %d bytes written for %d slow appends in %v, want at most %d", writes,
			len(after.Value()), slow, elapsed.Round(time.Millisecond), limit)
	}
	t.Logf("%d slow appends to a conversation of %d messages: %d stores of %d bytes in %v", slow, large,
		writes, len(after.Value()), elapsed.Round(time.Millisecond))
}

// TestBusySmallConversationStoredLessOften appends every few intervals to
// a conversation of a few short messages: while it is busy its snapshot
// counts as storeFloor, so it is written about once a maximum interval,
// not after every event; once it has been quiet for a maximum interval,
// its next event is written at the interval.
func TestBusySmallConversationStoredLessOften(t *testing.T) {
	const interval, maxInterval = 10 * time.Millisecond, time.Second
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc, WithSnapshotInterval(interval), WithSnapshotMaxInterval(maxInterval))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	kv := snapshotBucket(t, c)
	live := conversation.NewConversation()
	send := func(i int) { sendChained(t, c, live, "small", i) }
	send(0)
	natstest.WaitCaughtUp(t, c, "small", 10*time.Second)
	before, err := kv.Get(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	const busy = 20
	start := time.Now()
	for i := 1; i <= busy; i++ {
		send(i)
		time.Sleep(3 * interval)
	}
	natstest.WaitCaughtUp(t, c, "small", 10*time.Second)
	elapsed := time.Since(start)
	after, err := kv.Get(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	writes := after.Revision() - before.Revision()
	if limit := uint64(elapsed/maxInterval) + 2; writes > limit {
		t.Errorf("%d snapshots of %d bytes written for %d appends in %v, want at most %d", writes,
			len(after.Value()), busy, elapsed.Round(time.Millisecond), limit)
	}
	t.Logf("%d appends to a small conversation: %d stores of %d bytes in %v", busy, writes, len(after.Value()),
		elapsed.Round(time.Millisecond))

	time.Sleep(maxInterval + 100*time.Millisecond) // quiet
	send(busy + 1)
	sent := time.Now()
	natstest.WaitCaughtUp(t, c, "small", 10*time.Second)
	if lag := time.Since(sent); lag > maxInterval/2 {
		t.Errorf("after a quiet spell the next event was stored %v after it was sent, want about the interval (%v)", lag, interval)
	}
	want, err := live.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, natstest.WaitCaughtUp(t, c, "small", 10*time.Second), want); d != "" {
		t.Fatalf("stored snapshot differs from Parse: %s", d)
	}
}

// TestNextSlot checks the store slots of stretched intervals: the first
// slot at or after t, within one period, at the state's phase; states of
// random phases that fall due together spread over the period.
func TestNextSlot(t *testing.T) {
	const period = time.Second
	at := time.Unix(1_800_000_000, 123_456_789)
	for _, phase := range []uint32{0, 1, 1 << 31, 3 << 30, 1<<32 - 1} {
		s := nextSlot(at, period, phase)
		offset := time.Duration(uint64(period) * uint64(phase) >> 32)
		if s.Before(at) || s.Sub(at) >= period || time.Duration(s.UnixNano())%period != offset {
			t.Errorf("phase %d: slot %v for %v (offset %v)", phase, s, at, offset)
		}
		if again := nextSlot(s, period, phase); !again.Equal(s) {
			t.Errorf("phase %d: a slot is its own next slot: %v, got %v", phase, s, again)
		}
	}
	// 1,000 states due at the same instant, in tenths of the period.
	var tenths [10]int
	for i := range 1000 {
		phase := uint32(uint64(i) * (1 << 32) / 1000)
		tenths[nextSlot(at, period, phase).Sub(at)*10/period]++
	}
	for i, n := range tenths {
		if n < 80 || n > 120 {
			t.Errorf("tenth %d of the period holds %d of 1000 stores: %v", i, n, tenths)
		}
	}
}

// TestStoreManyStopsWhileBucketAway has storeMany store 150 conversations
// while the bucket refuses every write (its byte limit lowered):
// once a whole wave of storeWave writes has failed it tries no more, so
// that a bucket that is away does not hold the lane for wave after wave of
// timeouts. Every conversation keeps its events unstored.
func TestStoreManyStopsWhileBucketAway(t *testing.T) {
	const convs = 150
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	long := 20 * time.Second
	r := StartWorker(t, nc, WithLanes(1), WithSnapshotInterval(long), WithSnapshotMaxInterval(long), WithAckWait(time.Minute))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	for k := range convs {
		conv := fmt.Sprintf("away-%03d", k)
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m0", "role": "user", "content": "hi", "createdAt": 1000}); err != nil {
			t.Fatal(err)
		}
	}
	l := r.W.lanes.all[0]
	held := func() (n int) {
		if err := r.W.lanes.call(ctx, l, func() { l.cache.Each(func(*convState) { n++ }) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	natstest.WaitFor(t, 10*time.Second, "every event applied", func() bool { return held() == convs })

	refuseSnapshots(t, r.W)
	// Each conversation's first store comes at a random point of the
	// interval, so a few may be stored (or have failed) already: the lane
	// runs nothing else during the call, which counts the writes storeMany
	// tries by the failures they add.
	var due, tried, left int
	if err := r.W.lanes.call(ctx, l, func() {
		var states []*convState
		failures := map[*convState]int{}
		l.cache.Each(func(st *convState) {
			if len(st.store.events()) > 0 {
				states = append(states, st)
				failures[st] = int(st.failures)
			}
		})
		due = len(states)
		r.W.snapshots.storeMany(ctx, l, states)
		for _, st := range states {
			tried += int(st.failures) - failures[st]
			if len(st.store.events()) > 0 {
				left++
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if due <= storeWave {
		t.Skipf("only %d conversations left unstored before the bucket refused writes", due)
	}
	if tried != storeWave || left != due {
		t.Errorf("%d writes tried, %d of %d conversations left unstored; want %d tried, all left", tried, left, due, storeWave)
	}
}

func TestRoundUp(t *testing.T) {
	const grain = 25 * time.Millisecond
	on := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		at, want time.Time
	}{
		{on, on},
		{on.Add(time.Nanosecond), on.Add(grain)},
		{on.Add(grain - time.Nanosecond), on.Add(grain)},
		{on.Add(grain + 1), on.Add(2 * grain)},
	} {
		if got := roundUp(c.at, grain); !got.Equal(c.want) {
			t.Errorf("roundUp(%v) = %v, want %v", c.at.Sub(on), got.Sub(on), c.want.Sub(on))
		}
	}
	if at := on.Add(7); !roundUp(at, 0).Equal(at) {
		t.Error("a zero grain (snapshot interval 0) must leave the time as it is")
	}
}

// TestMaxAckPendingGrowsWithTheMaximumInterval: the events awaiting a store
// are acknowledged only once it is written, so a worker whose interval may
// stretch further needs room for more of them, or the consumer's
// MaxAckPending, not the worker, bounds its throughput under load.
func TestMaxAckPendingGrowsWithTheMaximumInterval(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, t.TempDir()))
	for _, c := range []struct {
		interval, max time.Duration
		seconds       int
	}{
		{50 * time.Millisecond, time.Second, 1},
		{50 * time.Millisecond, 0, 1},
		{50 * time.Millisecond, 2 * time.Second, 2},
		{50 * time.Millisecond, 4500 * time.Millisecond, 5},
		{3 * time.Second, time.Second, 3}, // a maximum below the interval: fixed at the interval
		{time.Second, 25 * time.Second, maxPendingSeconds},
	} {
		// An ack wait of a minute: intervals up to half of it are kept.
		w, err := New(nc, WithSnapshotInterval(c.interval), WithSnapshotMaxInterval(c.max), WithAckWait(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := w.snapshots.pendingStores(), c.seconds*pendingStoresPerSecond; got != want {
			t.Errorf("interval %v, maximum %v: room for %d events awaiting a store, want %d", c.interval, c.max, got, want)
		}
		if got := w.consumerConfig().MaxAckPending; got < c.seconds*pendingStoresPerSecond {
			t.Errorf("interval %v, maximum %v: MaxAckPending %d is under the stores' share", c.interval, c.max, got)
		}
	}
}

// TestSnapshotBytesCounted writes a snapshot after each of a conversation's
// events, one event at a time, and requires the counters of bytes to add
// up to the snapshots the bucket held after each and to the events as the
// stream stores them.
func TestSnapshotBytesCounted(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithSnapshotInterval(0), WithSnapshotMaxInterval(20*time.Millisecond),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	kv := snapshotBucket(t, c)
	live := conversation.NewConversation()
	var snapshots, events int64
	for i := range 12 {
		sent := sendChained(t, c, live, "counted", i)
		natstest.WaitVersion(t, c, "counted", sent.Sequence, 10*time.Second)
		e, err := kv.Get(ctx, "counted")
		if err != nil {
			t.Fatal(err)
		}
		snapshots += int64(len(e.Value()))
		// From the leader: a direct get adds headers of its own.
		stored, err := r.W.reads.EventAt(ctx, sent.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		events += int64(len(stored.Data) + headerSize(stored.Header))
	}
	r.Stop(t)
	s := natstest.Sums(t, reader)
	if s[MetricSnapshotBytes] != snapshots || s[MetricSnapshotEventBytes] != events {
		t.Errorf("counted %d bytes of snapshots covering %d of events, want %d and %d",
			s[MetricSnapshotBytes], s[MetricSnapshotEventBytes], snapshots, events)
	}
}

// TestWriteWaitsBounded: a snapshot write waits 2 s and a second more a
// MiB, at most storeTimeout; a write that got no answer (a bucket whose
// leader froze) is told from one the bucket refused, whose retries back
// off further (BenchmarkClusterFaults, TestFullStoreKeepsWorkerUp).
func TestWriteWaitsBounded(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 2 * time.Second}, {1 << 20, 3 * time.Second}, {4 << 20, 6 * time.Second}, {64 << 20, storeTimeout}} {
		if got := snapshotWriteTimeout(c.n); got != c.want {
			t.Errorf("snapshotWriteTimeout(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("worker: store snapshot: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("worker: store snapshot: %w", jetstream.ErrNoStreamResponse), true},
		{nats.ErrNoResponders, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10047, Description: "insufficient resources"}, false},
		{errConflict, false},
	} {
		if got := unanswered(c.err); got != c.want {
			t.Errorf("unanswered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
