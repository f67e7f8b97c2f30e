package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestLostPartitionStoresFirst takes a partition from the worker holding
// it while its snapshots are not stored yet (a long snapshot interval):
// the server pins another worker, as after a consumer leader change or a
// stall. The worker that lost it must store what it applied before
// letting go, so that the new owner starts from there: every event is
// applied once, by one of the two, and every conversation equals Parse.
func TestLostPartitionStoresFirst(t *testing.T) {
	ns := natstest.StartServer(t, "")
	// A stores late (its events stay unacknowledged meanwhile); B soon.
	interval := func(d time.Duration) []Option {
		return []Option{WithSnapshotInterval(d), WithSnapshotMaxInterval(d)}
	}
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	// Worker ids chosen so that B ranks first among the members and so
	// prefers the partition: random ids left B second in every one of 20
	// tries when A's id happened to rank low (a run in 20 or so).
	idA, idB := "lp-worker-a", ""
	for i := 0; idB == ""; i++ {
		if id := fmt.Sprint("lp-worker-b", i); memberRank(id) < memberRank(idA) {
			idB = id
		}
	}
	a := StartWorker(t, natstest.Connect(t, ns), handoverOptions(1, recA, append(interval(10*time.Second), WithID(idA))...)...)
	c := natstest.NewClient(t, natstest.Connect(t, ns))
	ctx := context.Background()

	const convs = 20
	sent := newAppends(t, c)
	want, last, send := sent.want, sent.last, sent.send
	for k := range convs {
		conv := fmt.Sprintf("lp-%02d", k)
		send(conv, conv+"-e0", map[string]any{"id": "m0", "role": "user", "content": "hello " + conv, "createdAt": 1000})
	}
	natstest.WaitFor(t, 10*time.Second, "worker A applied the first events", func() bool {
		return len(appliedSpans(0, recA)) == convs
	})

	// B pulls the partition too (it owns less than its share and prefers
	// it: a worker that does not prefer it waits for it to be left without
	// an owner for the pinned TTL) but A holds the pin.
	// The members bucket is read until it lists exactly the workers
	// running: a B just started, or one just stopped, may not be in it, or
	// may still be, on a busy machine.
	members := func(n int) []string {
		t.Helper()
		var ids []string
		natstest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d workers in the members bucket", n), func() bool {
			var err error
			ids, err = a.W.own.members.list(ctx)
			return err == nil && len(ids) == n
		})
		return ids
	}
	var b *Running
	for try := 0; b == nil; try++ {
		if try == 20 {
			t.Fatal("no worker B preferring the partition in 20 tries")
		}
		b = StartWorker(t, natstest.Connect(t, ns), handoverOptions(1, recB, append(interval(DefaultSnapshotInterval), WithID(idB))...)...)
		if b.W.own.members.preferred(0, members(2)) {
			break
		}
		b.Stop(t)
		b = nil
		members(1)
	}
	// A holds the pin. Unpinning lets the next delivery pin whichever pull the
	// server takes first; a probe event makes one, until B has it.
	stream := a.W.stream
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatal("worker B never got the partition")
		}
		if err := stream.UnpinConsumer(ctx, a.W.cfg.partitionConsumer(0), ownerGroup); err != nil {
			t.Fatal(err)
		}
		probe := fmt.Sprintf("lp-probe-%d", i)
		send(probe, probe+"-e0", map[string]any{"id": "p", "role": "user", "content": "probe", "createdAt": 1000})
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) && (len(b.W.OwnedPartitions()) == 0 || len(a.W.OwnedPartitions()) > 0) {
			time.Sleep(10 * time.Millisecond)
		}
		if len(b.W.OwnedPartitions()) == 1 && len(a.W.OwnedPartitions()) == 0 {
			break
		}
	}

	// Time for A's unstored events to come back to B, were they not
	// stored and acknowledged: B would apply them again.
	time.Sleep(time.Second)
	for k := range convs {
		conv := fmt.Sprintf("lp-%02d", k)
		send(conv, conv+"-e1", map[string]any{"id": "m1", "role": "assistant", "content": "hi", "parentId": "m0", "createdAt": 1001})
	}
	natstest.CheckStoredAt(t, c, want, last, 30*time.Second)
	checkAppliedOnce(t, 2*convs+len(want)-convs, recA, recB)
}

// TestHandOffWaitsForStores has a worker over its share hand a partition
// off while the snapshot bucket refuses writes (its message size limit
// lowered): the worker keeps the partition until its conversations are
// stored, then hands it off, and no event is applied twice.
func TestHandOffWaitsForStores(t *testing.T) {
	ns := natstest.StartServer(t, "")
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	a := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recA)...)
	c := natstest.NewClient(t, natstest.Connect(t, ns))

	// The bucket refuses every snapshot from now on: A applies events it cannot store.
	accept := refuseSnapshots(t, a.W)

	const convs = 20
	sent := newAppends(t, c)
	last, send := sent.last, sent.send
	for k := range convs {
		conv := fmt.Sprintf("ho-%02d", k)
		send(conv, conv+"-e0", map[string]any{"id": "m0", "role": "user", "content": "hello " + conv, "createdAt": 1000})
	}
	natstest.WaitFor(t, 10*time.Second, "worker A applied the first events", func() bool {
		return len(appliedSpans(0, recA)) == convs && len(a.W.OwnedPartitions()) == 2
	})

	b := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recB)...)
	time.Sleep(2 * time.Second) // several rebalances, each trying the hand-off
	if got := a.W.OwnedPartitions(); len(got) != 2 {
		t.Fatalf("worker A gave a partition up with its snapshots not stored: it owns %v", got)
	}

	accept()
	// B learns that it owns the partition from the next events it gets.
	natstest.WaitFor(t, 20*time.Second, "the partition handed off", func() bool { return len(a.W.OwnedPartitions()) == 1 })
	time.Sleep(time.Second) // time for unacknowledged events to come back, were there any
	for k := range convs {
		conv := fmt.Sprintf("ho-%02d", k)
		send(conv, conv+"-e1", map[string]any{"id": "m1", "role": "assistant", "content": "hi", "parentId": "m0", "createdAt": 1001})
	}
	for conv, seq := range last {
		natstest.WaitVersion(t, c, conv, seq, 30*time.Second)
	}
	if len(b.W.OwnedPartitions()) != 1 {
		t.Errorf("worker B owns partitions %v, want one", b.W.OwnedPartitions())
	}

	checkAppliedOnce(t, 2*convs, recA, recB)
}

// refuseSnapshots lowers the byte limit of w's snapshot bucket to 1 byte,
// so that every write fails as it does while the bucket is away, until
// the returned accept restores the limit.
func refuseSnapshots(t testing.TB, w *Worker) (accept func()) {
	t.Helper()
	ctx := context.Background()
	kvStream, err := w.js.Stream(ctx, "KV_"+w.cfg.subjects.SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	cfg := kvStream.CachedInfo().Config
	limit := cfg.MaxBytes
	set := func(n int64) {
		t.Helper()
		cfg.MaxBytes = n
		if _, err := w.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	// A full bucket, not a message size limit: the worker takes a message
	// too large for the bucket as a refusal no retry changes
	// (store_refusal.go), a full one as the server's trouble.
	set(1)
	return func() { set(limit) }
}

// handoverOptions are the options of the two workers of these tests, on
// a stream of the given partitions, tracing to rec, then extra.
func handoverOptions(partitions int, rec *tracetest.SpanRecorder, extra ...Option) []Option {
	return append([]Option{WithStorage(Storage{Partitions: partitions}), WithPinnedTTL(2 * time.Second),
		WithAckWait(30 * time.Second), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))},
		extra...)
}

// appends sends message.appended events and keeps, by conversation, the
// stream sequence of the last one and the conversation they make.
type appends struct {
	t    testing.TB
	c    *client.Client
	last map[string]uint64
	want map[string]*conversation.Conversation
}

func newAppends(t testing.TB, c *client.Client) *appends {
	return &appends{t: t, c: c, last: map[string]uint64{}, want: map[string]*conversation.Conversation{}}
}

// waitApplied waits until every conversation's snapshot is at the last
// event sent to it, and requires it to show every message sent.
func (a *appends) waitApplied() {
	a.t.Helper()
	for conv, seq := range a.last {
		snap := natstest.WaitVersion(a.t, a.c, conv, seq, 30*time.Second)
		res, err := a.want[conv].Result()
		if err != nil {
			a.t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(a.t, snap, res); d != "" {
			a.t.Errorf("%s: %s", conv, d)
		}
	}
}

// chain appends to conv the k-th message of a chain of user messages,
// m0 first, each the child of the one before, under an event id of the
// client's choosing.
func (a *appends) chain(conv string, k int) {
	a.t.Helper()
	data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": "hi"}
	if k > 0 {
		data["parentId"] = fmt.Sprintf("m%d", k-1)
	}
	a.send(conv, "", data)
}

// send appends data (a message) to conv as event id ("": an id of the
// client's choosing).
func (a *appends) send(conv, id string, data map[string]any) {
	a.t.Helper()
	var opts []client.SendOption
	if id != "" {
		opts = append(opts, client.WithEventID(id))
	}
	sent, err := a.c.Send(context.Background(), conv, streams.TypeMessageAppended, data, opts...)
	if err != nil {
		a.t.Fatal(err)
	}
	a.last[conv] = sent.Sequence
	m, err := conversation.NewMessage(data)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.want[conv] == nil {
		a.want[conv] = conversation.NewConversation()
	}
	if err := a.want[conv].Append(m); err != nil {
		a.t.Fatal(err)
	}
}

// checkAppliedOnce requires n distinct events, each applied once by one
// of the workers tracing to recs, or else taken in by a rebuild. The
// latter happens when a worker hands events back (a graceful stop, a
// hand-off) and the server redelivers them out of order: one delivered
// before an earlier event of its conversation makes the next owner
// rebuild the conversation from the stream, the earlier event included,
// which it then skips when it comes.
func checkAppliedOnce(t testing.TB, n int, recs ...*tracetest.SpanRecorder) {
	t.Helper()
	applied := map[string][]int{}
	skipped := map[string]bool{}
	for i, rec := range recs {
		spans := appliedSpans(i, rec)
		t.Logf("worker %d applied %d events", i, len(spans))
		for _, s := range spans {
			applied[s.eventID] = append(applied[s.eventID], i)
		}
		for _, s := range processSpans(i, rec, "skipped") {
			skipped[s.eventID] = true
		}
	}
	for id, by := range applied {
		if len(by) != 1 {
			t.Errorf("event %s applied %d times, by workers %v", id, len(by), by)
		}
	}
	rebuilt := 0
	for id := range skipped {
		if applied[id] == nil {
			rebuilt++
		}
	}
	if rebuilt > 0 {
		t.Logf("%d events taken in by rebuilds, then skipped", rebuilt)
	}
	if len(applied)+rebuilt != n {
		t.Errorf("%d events applied and %d taken in by rebuilds, want %d in all", len(applied), rebuilt, n)
	}
}

// heldTTL is the pinned TTL of the tests that hold a lane for two of
// them: a pull renews the pin every 1.5 s with it, leaving a loaded
// machine 1.5 s of slack.
const heldTTL = 3 * time.Second

// TestBusyLanesKeepThePin holds the one lane of a partitioned worker for
// two pinned TTLs while more events arrive than the lane and the pull
// buffer hold. The pull keeps asking for events meanwhile (see intake), so
// the server keeps the partition pinned to the worker under the same pin
// id; a pull that waited for the lane asked for nothing, and the server
// pinned the partition anew (to any worker waiting on it) after one TTL.
func TestBusyLanesKeepThePin(t *testing.T) {
	ns := natstest.StartServer(t, "")
	rec := tracetest.NewSpanRecorder()
	r := StartWorker(t, natstest.Connect(t, ns), handoverOptions(1, rec, WithLanes(1), WithPinnedTTL(heldTTL))...)
	c := natstest.NewClient(t, natstest.Connect(t, ns))
	sent := newAppends(t, c)
	sent.send("busy-0", "busy-0-e0", map[string]any{"id": "m0", "role": "user", "content": "hello", "createdAt": 1000})
	natstest.WaitFor(t, 10*time.Second, "the first event applied", func() bool { return len(appliedSpans(0, rec)) == 1 })
	before := consumerPins(t, r.W)[0]
	if before == "" {
		t.Fatal("the partition is not pinned")
	}

	release := holdLane(t, r.W)
	const events = 3 * (partitionWindow + 64) // well over the pull buffer and the lane's queue
	for k := range events {
		conv := fmt.Sprintf("busy-%d", 1+k%50)
		id := fmt.Sprintf("m%d", k/50)
		data := map[string]any{"id": id, "role": "user", "content": "hi", "createdAt": 1000 + k}
		if k >= 50 {
			data["parentId"] = fmt.Sprintf("m%d", k/50-1)
		}
		sent.send(conv, fmt.Sprintf("%s-%s", conv, id), data)
	}
	time.Sleep(2 * heldTTL)
	after := consumerPins(t, r.W)[0]
	release()
	if after != before {
		t.Errorf("pinned client %q after the lane was held for two TTLs, %q before", after, before)
	}
	sent.waitApplied()
	checkAppliedOnce(t, 1+events, rec)
}

// TestSlowHandOffKeepsThePin has a worker start a hand-off while its one
// lane is held for two pinned TTLs, with events of the partition queued
// behind it. The pull goes on during the hand-off, so the server keeps
// the partition pinned to the worker under the same pin id (a hand-off
// that stopped pulling first lost the pin after one TTL, and the next
// owner could apply the unstored events again); once the lane is free the
// partition is handed off and every event is applied once.
func TestSlowHandOffKeepsThePin(t *testing.T) {
	ns, a, recA, sent := startHeldLane(t, "sh")
	recB := tracetest.NewSpanRecorder()
	sent.round(0)
	natstest.WaitFor(t, 10*time.Second, "worker A applied the first events", func() bool {
		return len(appliedSpans(0, recA)) == heldConvs && len(a.W.OwnedPartitions()) == 2
	})
	before := consumerPins(t, a.W)

	release := holdLane(t, a.W)
	sent.round(1)
	b := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recB, WithPinnedTTL(heldTTL))...)
	time.Sleep(2 * heldTTL) // A hands a partition off, behind the held lane
	during := consumerPins(t, a.W)
	release()
	if !slices.Equal(during, before) {
		t.Errorf("pins %q while the hand-off waited for the lane, %q before", during, before)
	}
	natstest.WaitFor(t, 20*time.Second, "the partition handed off", func() bool { return len(a.W.OwnedPartitions()) == 1 })
	time.Sleep(time.Second) // time for unacknowledged events to come back, were there any
	sent.round(2)
	sent.waitApplied()
	if len(b.W.OwnedPartitions()) != 1 {
		t.Errorf("worker B owns partitions %v, want one", b.W.OwnedPartitions())
	}
	checkAppliedOnce(t, 3*heldConvs, recA, recB)
}

// heldConvs is how many conversations the held-lane tests with two
// partitions drive.
const heldConvs = 20

// heldLane is the client side of those tests: it sends rounds of events to
// heldConvs conversations named prefix-NN.
type heldLane struct {
	*appends
	prefix string
}

// startHeldLane starts a server and worker A of a held-lane test (two
// partitions, one lane, a pinned TTL of heldTTL) tracing to recA, and a
// client sending to conversations named prefix-NN.
func startHeldLane(t testing.TB, prefix string) (*server.Server, *Running, *tracetest.SpanRecorder, *heldLane) {
	t.Helper()
	ns := natstest.StartServer(t, "")
	recA := tracetest.NewSpanRecorder()
	a := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recA, WithLanes(1), WithPinnedTTL(heldTTL))...)
	return ns, a, recA, &heldLane{appends: newAppends(t, natstest.NewClient(t, natstest.Connect(t, ns))), prefix: prefix}
}

// round appends message mJ to every conversation, chained to m(J-1).
func (h *heldLane) round(j int) {
	h.t.Helper()
	for k := range heldConvs {
		conv := fmt.Sprintf("%s-%02d", h.prefix, k)
		data := map[string]any{"id": fmt.Sprintf("m%d", j), "role": "user", "content": "hello", "createdAt": 1000 + j}
		if j > 0 {
			data["parentId"] = fmt.Sprintf("m%d", j-1)
		}
		h.send(conv, fmt.Sprintf("%s-e%d", conv, j), data)
	}
}

// holdLane holds w's first lane with a task until the returned release is
// called.
func holdLane(t testing.TB, w *Worker) (release func()) {
	t.Helper()
	held := make(chan struct{})
	if err := w.lanes.do(context.Background(), w.lanes.all[0], func() { <-held }); err != nil {
		t.Fatal(err)
	}
	return func() { close(held) }
}

// consumerPins returns the pinned client id of every partition consumer of
// w, as the server reports them.
func consumerPins(t testing.TB, w *Worker) []string {
	t.Helper()
	var out []string
	for _, cons := range w.own.cons {
		info, err := cons.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pinned := ""
		for _, g := range info.PriorityGroups {
			if g.Group == ownerGroup {
				pinned = g.PinnedClientID
			}
		}
		out = append(out, pinned)
	}
	return out
}

// TestGracefulStopKeepsThePins stops a worker gracefully while its one
// lane is held for two pinned TTLs with events queued behind it. Its pulls
// go on while it stores, so the server keeps its partition pinned to it
// under the same pin id; then the partition goes to the other worker and
// every event is applied once.
func TestGracefulStopKeepsThePins(t *testing.T) {
	ns, a, recA, sent := startHeldLane(t, "gs")
	recB := tracetest.NewSpanRecorder()
	sent.round(0)
	natstest.WaitFor(t, 10*time.Second, "worker A applied the first events", func() bool {
		return len(appliedSpans(0, recA)) == heldConvs
	})
	b := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, recB, WithPinnedTTL(heldTTL))...)
	natstest.WaitFor(t, 20*time.Second, "a partition handed off", func() bool { return len(a.W.OwnedPartitions()) == 1 })
	sent.round(1) // B learns it owns the other partition from its events
	natstest.WaitFor(t, 20*time.Second, "a partition each", func() bool { return len(b.W.OwnedPartitions()) == 1 })
	owned := a.W.OwnedPartitions()[0]
	before := consumerPins(t, a.W)[owned]

	release := holdLane(t, a.W)
	sent.round(2)
	a.Cancel()
	time.Sleep(2 * heldTTL) // A stores, behind the held lane
	during := consumerPins(t, b.W)[owned]
	release()
	if during != before {
		t.Errorf("partition %d pinned to %q while worker A stopped, %q before", owned, during, before)
	}
	a.Stop(t)
	time.Sleep(time.Second) // time for unacknowledged events to come back, were there any
	sent.round(3)
	sent.waitApplied()
	if len(b.W.OwnedPartitions()) != 2 {
		t.Errorf("worker B owns partitions %v, want both", b.W.OwnedPartitions())
	}
	checkAppliedOnce(t, 4*heldConvs, recA, recB)
}
