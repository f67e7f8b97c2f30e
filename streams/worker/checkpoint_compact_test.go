package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// editLoad is a compaction workload: convs conversations of msgs messages
// each, then edits rounds of one edit to each conversation, round robin,
// so that every conversation's events are spread over the stream.
type editLoad struct {
	convs, msgs, edits int
	// size is the length of each message's content.
	size int
}

// convID names conversation i of the load.
func (l editLoad) convID(i int) string { return fmt.Sprintf("compact-%d", i) }

// appends returns the messages conversation i begins with.
func (l editLoad) appends() []map[string]any { return chainOf(l.msgs, l.size) }

// edit returns edit k of a conversation: the content of one message.
func (l editLoad) edit(k int) map[string]any {
	text := fmt.Sprintf("edit %d ", k)
	return map[string]any{"id": fmt.Sprintf("m%d", k%l.msgs), "content": text + strings.Repeat("x", max(0, l.size-len(text)))}
}

// want returns what every conversation holds after its first edits.
func (l editLoad) want(t testing.TB, edits int) map[string]*conversation.Conversation {
	t.Helper()
	want := map[string]*conversation.Conversation{}
	for i := range l.convs {
		conv := conversation.NewConversation()
		for _, d := range l.appends() {
			if err := conv.Append(conversation.MustMessage(d)); err != nil {
				t.Fatal(err)
			}
		}
		for k := range edits {
			e := l.edit(k)
			if err := conv.Update(e["id"].(string), e); err != nil {
				t.Fatal(err)
			}
		}
		want[l.convID(i)] = conv
	}
	return want
}

// publish sends the appends of every conversation, then edits from to
// to, round robin, and returns the sequence of each conversation's last
// event.
func (l editLoad) publish(t testing.TB, c *client.Client, from, to int) map[string]uint64 {
	t.Helper()
	last := map[string]uint64{}
	if from == 0 {
		for i := range l.convs {
			last[l.convID(i)] = publishAll(t, c, l.convID(i), streams.TypeMessageAppended, l.appends())
		}
	}
	const round = 50 // edits of a conversation in one go
	for k := from; k < to; k += round {
		for i := range l.convs {
			var datas []map[string]any
			for j := k; j < min(k+round, to); j++ {
				datas = append(datas, l.edit(j))
			}
			last[l.convID(i)] = publishAll(t, c, l.convID(i), streams.TypeMessageUpdated, datas)
		}
	}
	return last
}

// heldBytes is what the conversations of want hold now: the JSON of their
// messages.
func heldBytes(t testing.TB, want map[string]*conversation.Conversation) int64 {
	t.Helper()
	var n int64
	for _, conv := range want {
		for _, m := range conv.Messages() {
			raw, err := m.JSON()
			if err != nil {
				t.Fatal(err)
			}
			n += int64(len(raw))
		}
	}
	return n
}

// eventsBytes is the size of the events stream as its server counts it.
func eventsBytes(t testing.TB, c *client.Client) (bytes, msgs uint64) {
	t.Helper()
	st, err := c.JetStream().Stream(context.Background(), c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Bytes, info.State.Msgs
}

// appendOneMore sends each conversation of want a message after its last,
// so that a worker with an empty cache rebuilds it, and returns each's
// last event.
func appendOneMore(t testing.TB, c *client.Client, want map[string]*conversation.Conversation, id string) map[string]uint64 {
	t.Helper()
	last := map[string]uint64{}
	for conv, live := range want {
		msgs := live.Messages()
		m := conversation.MustMessage(map[string]any{"id": id, "role": "user", "content": "one more",
			"parentId": msgs[len(msgs)-1].ID()})
		sent, err := c.Send(context.Background(), conv, streams.TypeMessageAppended, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := live.Append(m); err != nil {
			t.Fatal(err)
		}
		last[conv] = sent.Sequence
	}
	return last
}

// TestCompaction edits conversations far more than they hold, through a
// worker whose cache holds a few of them (each event of another evicts
// one: a checkpoint, then a purge, while the worker is busy), stops it,
// and requires the events stream to hold at most twice what the
// conversations hold; then a worker with an empty cache rebuilds each from
// its checkpoint alone, and every stored snapshot equals Parse.
func TestCompaction(t *testing.T) {
	load := editLoad{convs: 12, msgs: 6, edits: 200, size: 120}
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	want := load.want(t, load.edits)

	reader := sdkmetric.NewManualReader()
	a := StartWorker(t, nc, WithCacheConversations(4), WithLanes(2),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	last := load.publish(t, c, 0, load.edits)
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
	a.Stop(t)
	rm := natstest.Collect(t, reader)
	t.Logf("worker A: checkpoints written %d, stale %d; purges %d, failed %d; rebuilds from a checkpoint %d, from events %d",
		sumWhere(rm, MetricCheckpoints, "outcome", "written"), sumWhere(rm, MetricCheckpoints, "outcome", "stale"),
		sumWhere(rm, MetricCompactions, "outcome", "purged"), sumWhere(rm, MetricCompactions, "outcome", "failed"),
		sumWhere(rm, MetricRebuilds, "from", "checkpoint"), sumWhere(rm, MetricRebuilds, "from", "events"))
	if n := sumWhere(rm, MetricCompactions, "outcome", "purged"); n < int64(load.convs) {
		t.Errorf("%d purges, want one for each of %d conversations at least", n, load.convs)
	}

	state := heldBytes(t, want)
	bytes, msgs := eventsBytes(t, c)
	t.Logf("events stream: %d bytes in %d events for %d conversations holding %d bytes (%d events sent)",
		bytes, msgs, load.convs, state, load.convs*(load.msgs+load.edits))
	if int64(bytes) > 2*state {
		t.Errorf("the events stream holds %d bytes, over twice the %d the conversations hold", bytes, state)
	}

	// An empty cache: each conversation's next event rebuilds it from its
	// checkpoint and what the stream still holds of it.
	reader = sdkmetric.NewManualReader()
	StartWorker(t, nc, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	last = appendOneMore(t, c, want, "after-restart")
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
	rm = natstest.Collect(t, reader)
	if got := sumWhere(rm, MetricRebuilds, "from", "checkpoint"); got != int64(load.convs) {
		t.Errorf("after the restart, %d rebuilds from a checkpoint, want %d (from events: %d)",
			got, load.convs, sumWhere(rm, MetricRebuilds, "from", "events"))
	}
}

// TestCompactionBusy edits small conversations far more than they hold
// through a worker that keeps them all (a cache holding every one, none
// let go of or gone quiet), in phases of one burst of 50 edits a
// conversation, fewer than the 64 events after which a busy conversation
// is checkpointed to bound its rebuild: only the compaction rule
// (WithCompactRatio, compactDue) checkpoints them. After each phase is
// applied, while the worker still holds every conversation, the events
// stream must come within 1+DefaultCompactRatio times what the
// conversations hold (waited for: the checkpoint of a phase's last store
// may still be under way); the largest size seen while events flowed is
// logged, not asserted (a burst published is in the stream before any
// worker applies it). Each conversation must equal Parse after each phase.
// Stores come every 500 ms, not 50: a store that finds its conversation's
// last checkpoint still being written adds none (compactDue), and a
// burst's last store is its last until the next phase, so a write slower
// than the interval on a loaded machine would leave that burst's events
// for the quiet sweep, which this test turns off.
func TestCompactionBusy(t *testing.T) {
	if err := CheckOptions(WithCompactRatio(-1)); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("a negative compaction ratio: %v, want ErrInvalidConfig", err)
	}
	load := editLoad{convs: 8, msgs: 6, edits: 200, size: 120}
	const phase = 50 // edits a conversation between samples
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	reader := sdkmetric.NewManualReader()
	StartWorker(t, nc, WithCacheConversations(load.convs*2), WithCacheIdle(0), WithSnapshotInterval(500*time.Millisecond),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))

	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // samples the stream while events flow
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if bytes, _, err := streamBytes(c); err == nil && bytes > peak.Load() {
				peak.Store(bytes)
			}
		}
	}()
	defer func() { close(done); <-sampled }()

	bound := 1 + DefaultCompactRatio
	for from := 0; from < load.edits; from += phase {
		last := load.publish(t, c, from, from+phase)
		want := load.want(t, from+phase)
		natstest.CheckStoredAt(t, c, want, last, time.Minute)
		state := heldBytes(t, want)
		var bytes, msgs uint64
		natstest.WaitFor(t, time.Minute, fmt.Sprintf("the events stream within %.1fx the %d bytes the conversations hold after %d edits", bound, state, from+phase), func() bool {
			bytes, msgs = eventsBytes(t, c)
			return float64(bytes) <= bound*float64(state)
		})
		t.Logf("after %d edits a conversation: events stream %d bytes in %d events, the conversations %d bytes (%.2fx)",
			from+phase, bytes, msgs, state, float64(bytes)/float64(state))
	}
	// A checkpoint's purge is counted once it returns, which can come
	// after the stream is within the bound (the phase's earlier purge
	// may have brought it there): on a loaded machine the last phase's
	// were still under way when the metrics were read at once.
	wantPurges := int64(load.convs * load.edits / phase)
	var rm metricdata.ResourceMetrics
	deadline := time.Now().Add(time.Minute)
	for {
		rm = natstest.Collect(t, reader)
		if sumWhere(rm, MetricCompactions, "outcome", "purged") >= wantPurges || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("largest events stream seen while events flowed: %d bytes; checkpoints written %d, purges %d (failed %d)",
		peak.Load(), sumWhere(rm, MetricCheckpoints, "outcome", "written"), sumWhere(rm, MetricCompactions, "outcome", "purged"),
		sumWhere(rm, MetricCompactions, "outcome", "failed"))
	if n := sumWhere(rm, MetricCompactions, "outcome", "purged"); n < wantPurges {
		t.Errorf("%d purges, want one a conversation and phase at least (%d)", n, wantPurges)
	}
}

// streamBytes is eventsBytes for a goroutine other than the test's.
func streamBytes(c *client.Client) (bytes, msgs uint64, err error) {
	st, err := c.JetStream().Stream(context.Background(), c.Subjects().EventsStream())
	if err != nil {
		return 0, 0, err
	}
	info, err := st.Info(context.Background())
	if err != nil {
		return 0, 0, err
	}
	return info.State.Bytes, info.State.Msgs, nil
}

// TestCompactionWorkerKilled cuts a compacting worker's connection (a
// crash: writes and purges under way are lost, acknowledgements too)
// while events arrive, publishes more with no worker, and requires a new
// worker with an empty cache to bring every conversation to Parse's
// result: a checkpoint covers the events a purge removed, whatever was
// cut short.
func TestCompactionWorkerKilled(t *testing.T) {
	load := editLoad{convs: 10, msgs: 5, edits: 300, size: 80}
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)

	ncA, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	a := StartWorker(t, ncA, WithCacheConversations(3), WithLanes(2), WithAckWait(2*time.Second),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	load.publish(t, c, 0, load.edits/2)
	// Killed once it has compacted, while it works through the rest.
	natstest.WaitFor(t, time.Minute, "worker A's first purges", func() bool {
		return sumWhere(natstest.Collect(t, reader), MetricCompactions, "outcome", "purged") >= 3
	})
	go func() {
		time.Sleep(50 * time.Millisecond)
		ncA.Close()
	}()
	load.publish(t, c, load.edits/2, 3*load.edits/4)
	select {
	case <-a.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("worker A did not stop after losing its connection")
	}
	rm := natstest.Collect(t, reader)
	t.Logf("worker A, killed: checkpoints written %d, purges %d",
		sumWhere(rm, MetricCheckpoints, "outcome", "written"), sumWhere(rm, MetricCompactions, "outcome", "purged"))
	last := load.publish(t, c, 3*load.edits/4, load.edits)

	StartWorker(t, nc, WithCacheConversations(3), WithLanes(2), WithAckWait(2*time.Second))
	want := load.want(t, load.edits)
	natstest.CheckStoredAt(t, c, want, last, 2*time.Minute)
	last = appendOneMore(t, c, want, "after-kill")
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
}

// TestCompactionCluster is TestCompaction on a 3-node cluster (streams and
// buckets of 3 replicas, a partitioned events stream) with two workers,
// each of whose caches holds a few conversations: rebuilds read any
// replica while the other worker and its own evictions compact. After
// both stop, the stream holds at most twice what the conversations hold,
// and a worker with an empty cache brings every one to Parse's result.
func TestCompactionCluster(t *testing.T) {
	load := editLoad{convs: 8, msgs: 5, edits: 120, size: 100}
	servers := natstest.StartCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3, Partitions: 3}
	conn := func(i int) *nats.Conn {
		nc, err := nats.Connect(natstest.ClusterURLs(servers, i), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	c := natstest.NewClient(t, conn(2))
	want := load.want(t, load.edits)
	var workers []*Running
	for i := range 2 {
		workers = append(workers, StartWorker(t, conn(i), WithStorage(storage), WithLanes(2), WithCacheConversations(2)))
	}
	last := load.publish(t, c, 0, load.edits)
	natstest.CheckStoredAt(t, c, want, last, 2*time.Minute)
	for _, r := range workers {
		r.Stop(t)
	}
	state := heldBytes(t, want)
	bytes, msgs := eventsBytes(t, c)
	t.Logf("events stream: %d bytes in %d events for %d conversations holding %d bytes (%d events sent)",
		bytes, msgs, load.convs, state, load.convs*(load.msgs+load.edits))
	if int64(bytes) > 2*state {
		t.Errorf("the events stream holds %d bytes, over twice the %d the conversations hold", bytes, state)
	}

	StartWorker(t, conn(1), WithStorage(storage), WithLanes(2))
	last = appendOneMore(t, c, want, "after-restart")
	natstest.CheckStoredAt(t, c, want, last, 2*time.Minute)
}

// TestCompactionRacesRebuild rebuilds a conversation again and again while
// its checkpoint moves forward and the events before it are purged, as a
// worker taking it over or its own eviction's checkpoint would do: every
// rebuild must come out equal to the conversation (or fail, for its event
// to be redelivered), none shorter for events purged between its
// checkpoint read and its event reads.
func TestCompactionRacesRebuild(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.FailureLogger(t, 20)))
	purges := newPurger(w.stream, 0, nil, w.partitionOf, w.cfg.logger) // no consumer reads the stream
	w.cp.compactor = newCompactor(w.stream, purges, func(id string) []string {
		return []string{w.cfg.subjects.StoredEvents(id, 0), w.cfg.subjects.StoredChunks(id, 0)}
	}, true, 0, w.metrics, w.cfg.logger, EventCompaction{On: true})

	const n, every = 600, 25
	var seqs []uint64
	for i, d := range chainOf(n, 60) {
		sent, err := c.Send(ctx, "race", streams.TypeMessageAppended, d)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, sent.Sequence)
		if i%4 == 0 { // another conversation's events between
			if _, err := c.Send(ctx, "other", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("o%d", i), "role": "user"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := seqs[n-1] + 1
	full, err := w.rebuild(ctx, "race", end, false)
	if err != nil {
		t.Fatal(err)
	}
	want := mustMarshal(t, mustResult(t, full.conv))
	// The checkpoints a compacting worker would write, every 25 events.
	type stored struct {
		seq   uint64
		value []byte
	}
	var cps []stored
	for k := every; k < n; k += every {
		r, err := w.rebuild(ctx, "race", seqs[k-1]+1, false)
		if err != nil {
			t.Fatal(err)
		}
		value, err := conversationCheckpoint(r.conv, r.seen, r.last, uint64(r.n)).encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, stored{r.seen, slices.Clone(value)})
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, cp := range cps {
			if ok, err := w.cp.putNewer(ctx, "race", cp.value, cp.seq); err != nil || !ok {
				t.Errorf("checkpoint at %d: written %v, %v", cp.seq, ok, err)
				return
			}
			w.cp.compactor.compact(ctx, "race", cp.seq, nil)
			time.Sleep(10 * time.Millisecond) // rebuilds under way meanwhile
		}
	}()
	rebuilds, failed := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		r, err := w.rebuild(ctx, "race", end, true)
		rebuilds++
		if err != nil {
			failed++
			continue
		}
		if got := mustMarshal(t, mustResult(t, r.conv)); got != want {
			t.Errorf("rebuild %d (from a checkpoint: %v) differs from the conversation: %d messages, want %d",
				rebuilds, r.checkpoint, r.conv.Len(), full.conv.Len())
			break
		}
	}
	<-done
	if t.Failed() {
		return
	}
	// An older checkpoint never goes over a newer one.
	if ok, err := w.cp.putNewer(ctx, "race", cps[0].value, cps[0].seq); ok || err != nil {
		t.Errorf("an older checkpoint over the last: written %v, %v", ok, err)
	}
	if r, err := w.rebuild(ctx, "race", end, true); err != nil || mustMarshal(t, mustResult(t, r.conv)) != want {
		t.Errorf("the rebuild after the last compaction: %v", err)
	}
	t.Logf("%d rebuilds while %d checkpoints were written and compacted; %d failed (redelivered)", rebuilds, len(cps), failed)
}

// warnings keeps the log records at Warn and above a worker writes.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// TestStopQuiet: at the end of a load run a stopping worker logged
// hundreds of "events not compacted ... nats: connection closed": the
// checkpoint writes still queued when checkpointStopBudget ran out went on
// after Run returned and the connection closed, each with its purge. Now
// the checkpointer stops before the connection closes: a write queued
// before the stop and run after it writes and purges nothing, and a purge
// that finds the connection closed logs no warning.
func TestStopQuiet(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	logged := &warnings{}
	r := StartWorker(t, nc, WithLogger(slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	ctx := context.Background()
	for k := range 3 {
		data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": "hi", "createdAt": 1000 + k}
		if k > 0 {
			data["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		if _, err := c.Send(ctx, "quiet", streams.TypeMessageAppended, data); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitCaughtUp(t, c, "quiet", 30*time.Second)
	r.Stop(t)
	nc.Close() // as cmd/worker does once Run returned
	// The lanes are stopped: their caches can be read here.
	st := r.W.lanes.pick("quiet").cache.Peek("quiet")
	if st == nil {
		t.Fatal("the conversation is not cached after the stop")
	}
	r.W.cp.writeOf(ctx, st, capture(st))() // a write queued before the stop
	r.W.cp.compactor.compact(ctx, "quiet", st.seq, nil)
	for _, line := range logged.all() {
		if strings.Contains(line, "not compacted") || strings.Contains(line, "checkpoint not written") || strings.Contains(line, "connection closed") {
			t.Errorf("logged after the stop: %s", line)
		}
	}
}

// TestCheckpointReadsConfirmed compacts conversations on a 3-node cluster
// (buckets of 3 replicas), then has a worker with an empty cache, on a
// server of its own, rebuild each from its checkpoint. Every checkpoint it
// reads must be its bucket leader's: a direct get may be answered by a
// replica that has not applied the last checkpoint yet, and the events
// after the one it answers with may be purged (TestClusterFaults once
// ended with an edit missing). The reads are seen as the leader's
// confirmations (read.Keys) on the bucket's API subject.
func TestCheckpointReadsConfirmed(t *testing.T) {
	load := editLoad{convs: 6, msgs: 5, edits: 100, size: 100}
	servers := natstest.StartCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
	nc := natstest.Connect(t, servers[0])
	c := natstest.NewClient(t, nc)
	want := load.want(t, load.edits)
	first := StartWorker(t, nc, WithStorage(storage), WithLanes(2), WithCacheConversations(2))
	natstest.CheckStoredAt(t, c, want, load.publish(t, c, 0, load.edits), 2*time.Minute)
	first.Stop(t)
	for id := range want {
		if _, _, ok := storedCheckpoint(t, first.W, id); !ok {
			t.Fatalf("%s has no checkpoint", id)
		}
	}

	bucket := c.Subjects().CheckpointBucket()
	var mu sync.Mutex
	confirmed := map[string]bool{}
	sub, err := nc.Subscribe("$JS.API.STREAM.MSG.GET.KV_"+bucket, func(m *nats.Msg) {
		var req struct {
			NextFor string `json:"next_by_subj"`
			LastFor string `json:"last_by_subj"`
		}
		if json.Unmarshal(m.Data, &req) == nil {
			mu.Lock()
			confirmed[strings.TrimPrefix(req.NextFor+req.LastFor, "$KV."+bucket+".")] = true
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	second := StartWorker(t, natstest.Connect(t, servers[2]), WithStorage(storage), WithLanes(2))
	if mode := second.W.cp.keys.Mode(); mode != read.Confirmed {
		t.Errorf("checkpoints of a bucket of 3 replicas read %s, want confirmed", mode)
	}
	natstest.CheckStoredAt(t, c, want, appendOneMore(t, c, want, "after-restart"), 2*time.Minute)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range want {
		if !confirmed[id] {
			t.Errorf("%s: its checkpoint was read without its leader (confirmed: %v)", id, confirmed)
		}
	}
}
