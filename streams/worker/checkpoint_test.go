package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestCheckpointRoundTrip encodes conformance conversations, changed by
// updates, deletes and groups as events change them, and requires the
// decoded conversation to parse exactly as the original, with the same
// messages and groups in the same order; so too from a format 1
// checkpoint (no checksum), which an earlier worker wrote. The
// checkpoints are encoded one after another in the same room, as a
// worker's writes are, and must read as those encoded in new room.
func TestCheckpointRoundTrip(t *testing.T) {
	var cases []natstest.CorpusCase
	for _, file := range []string{"reference-suite.jsonl.gz", "generated-normal.jsonl.gz", "generated-noise.jsonl.gz"} {
		cases = append(cases, natstest.LoadCorpus(t, file, 80)...)
	}
	shared := new(checkpointBuffers)
	for i, cc := range cases {
		live := conversation.NewConversation()
		for _, g := range cc.Groups {
			if err := live.UpsertGroup(g); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range cc.Msgs {
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		first := cc.Msgs[0].ID()
		if err := live.Update(first, map[string]any{"content": "edited", "metadata": map[string]any{"n": 1.5}}); err != nil {
			t.Fatal(err)
		}
		if len(cc.Msgs) > 2 {
			if err := live.Delete(cc.Msgs[len(cc.Msgs)/2].ID()); err != nil {
				t.Fatal(err)
			}
		}
		value, err := conversationCheckpoint(live, 40, 39, 12).encode(shared)
		if err != nil {
			t.Fatal(err)
		}
		if fresh, err := conversationCheckpoint(live, 40, 39, 12).encode(nil); err != nil || !bytes.Equal(value, fresh) {
			t.Fatalf("case %d (%s): encoded in reused room, %d bytes; in new room, %d bytes (%v)", i, cc.Name, len(value), len(fresh), err)
		}
		v1 := rewriteCheckpoint(t, value, func(cp *checkpoint) { cp.Format, cp.Sum = 1, 0 })
		for format, value := range map[int][]byte{checkpointFormat: value, 1: v1} {
			cp, got, err := decodeCheckpoint(value)
			if err != nil {
				t.Fatalf("case %d (%s), format %d: %v", i, cc.Name, format, err)
			}
			if cp.Seq != 40 || cp.Version != 39 || cp.Events != 12 {
				t.Errorf("case %d: head %d/%d/%d, want 40/39/12", i, cp.Seq, cp.Version, cp.Events)
			}
			for what, pair := range map[string][2]any{
				"messages": {live.Messages(), got.Messages()},
				"groups":   {live.Groups(), got.Groups()},
				"result":   {mustResult(t, live), mustResult(t, got)},
			} {
				a, b := mustMarshal(t, pair[0]), mustMarshal(t, pair[1])
				if a != b {
					t.Errorf("case %d (%s), format %d: %s differ after a checkpoint:\n%.300s\n%.300s", i, cc.Name, format, what, a, b)
				}
			}
		}
	}
	t.Logf("%d conversations", len(cases))
}

// rewriteCheckpoint returns the checkpoint value changed by change.
func rewriteCheckpoint(t testing.TB, value []byte, change func(*checkpoint)) []byte {
	t.Helper()
	plain, err := s2.Decode(nil, value)
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := msgpack.Unmarshal(plain, &cp); err != nil {
		t.Fatal(err)
	}
	change(&cp)
	if plain, err = msgpack.Marshal(&cp); err != nil {
		t.Fatal(err)
	}
	return s2.Encode(nil, plain)
}

func mustResult(t testing.TB, c *conversation.Conversation) *conversation.Result {
	t.Helper()
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckpointRefusesWhatItCannotUse: a value that is not a checkpoint,
// one of another format, one whose messages do not match its checksum,
// and one with more messages than the limit allows are errors, never a
// partial conversation.
func TestCheckpointRefusesWhatItCannotUse(t *testing.T) {
	live := conversation.NewConversation()
	for i := range 5 {
		if err := live.Append(conversation.MustMessage(map[string]any{"id": fmt.Sprint(i), "role": "user"})); err != nil {
			t.Fatal(err)
		}
	}
	good, err := conversationCheckpoint(live, 5, 5, 5).encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decodeCheckpoint(good, conversation.WithMaxMessages(4)); !errors.Is(err, conversation.ErrTooManyMessages) {
		t.Errorf("over the message limit: %v", err)
	}
	for name, value := range map[string][]byte{
		"empty":     nil,
		"not s2":    []byte("{\"id\":1}"),
		"truncated": good[:len(good)/2],
		// An S2 block whose header claims 2^40 bytes decoded.
		"too large": {0x80, 0x80, 0x80, 0x80, 0x80, 0x20},
		"format 3":  rewriteCheckpoint(t, good, func(cp *checkpoint) { cp.Format = 3 }),
		// Valid JSON still, but not what was written.
		"changed message": rewriteCheckpoint(t, good, func(cp *checkpoint) {
			cp.Messages[2] = bytes.Replace(cp.Messages[2], []byte(`"user"`), []byte(`"tool"`), 1)
		}),
		"message dropped": rewriteCheckpoint(t, good, func(cp *checkpoint) { cp.Messages = cp.Messages[1:] }),
	} {
		if _, _, err := decodeCheckpoint(value); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestRebuildFromCheckpoint rebuilds a conversation from checkpoints
// written at each of several points, with events after them interleaved
// with another conversation's, up to points before, at and after the
// checkpoint's sequence, and requires the same conversation as a replay
// of every event. A checkpoint at or after the sequence being rebuilt up
// to (a crashed worker's, for an event being redelivered) and one that
// does not decode are not used.
func TestRebuildFromCheckpoint(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.TestLogger(t)))

	const n = replayBatch + 40
	seqs := make([]uint64, n)
	for i := range n {
		msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": fmt.Sprint("c", i)}
		if i > 0 {
			msg["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		typ := streams.TypeMessageAppended
		if i%50 == 49 { // an update now and then
			typ, msg = streams.TypeMessageUpdated, map[string]any{"id": fmt.Sprintf("m%d", i-5), "content": "edited"}
		}
		sent, err := c.Send(ctx, "cp", typ, msg)
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = sent.Sequence
		if i%3 == 0 {
			if _, err := c.Send(ctx, "other", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("o%d", i), "role": "user"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	full := func(before uint64) *replay {
		t.Helper()
		r, err := w.rebuild(ctx, "cp", before, false)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(value []byte) {
		t.Helper()
		if _, err := w.cp.bucket.Put(ctx, "cp", value); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []int{1, 9, replayBatch} { // the checkpoint holds the first at events
		base := full(seqs[at-1] + 1)
		value, err := conversationCheckpoint(base.conv, base.seen, base.last, uint64(base.n)).encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		put(value)
		for _, upTo := range []int{at - 1, at, at + 1, at + 7, n - 1, n} {
			if upTo < 1 {
				continue
			}
			before := seqs[n-1] + 5 // past the end
			if upTo < n {
				before = seqs[upTo]
			}
			want := full(before)
			got, err := w.rebuild(ctx, "cp", before, true)
			if err != nil {
				t.Fatalf("checkpoint at %d, up to %d: %v", at, upTo, err)
			}
			if usable := upTo >= at; got.checkpoint != usable {
				t.Errorf("checkpoint at %d, up to %d: used %v, want %v", at, upTo, got.checkpoint, usable)
			}
			if got.last != want.last || got.base+uint64(got.n) != uint64(want.n) {
				t.Errorf("checkpoint at %d, up to %d: last %d after %d+%d events, want %d after %d",
					at, upTo, got.last, got.base, got.n, want.last, want.n)
			}
			if a, b := mustMarshal(t, mustResult(t, want.conv)), mustMarshal(t, mustResult(t, got.conv)); a != b {
				t.Errorf("checkpoint at %d, up to %d: the conversations differ", at, upTo)
			}
		}
	}
	put([]byte("not a checkpoint"))
	got, err := w.rebuild(ctx, "cp", seqs[n-1]+1, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.checkpoint || got.conv.Len() != full(seqs[n-1]+1).conv.Len() {
		t.Errorf("with a broken checkpoint: used %v, %d messages", got.checkpoint, got.conv.Len())
	}
}

// TestEvictionAndStopWriteCheckpoints runs a worker with a one-conversation
// cache, so that every switch between conversations evicts one, then stops
// it and starts another: the evictions and the stop write checkpoints, the
// rebuilds start from them, and every stored snapshot equals Parse of its
// conversation.
func TestEvictionAndStopWriteCheckpoints(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	cases := natstest.LoadCorpus(t, "generated-normal.jsonl.gz", 12)
	const least = 16 // messages: half of them are sent before the round robin
	var used []natstest.CorpusCase
	for _, cc := range cases {
		if len(cc.Msgs) >= least {
			used = append(used, cc)
		}
	}
	if len(used) < 3 {
		t.Fatalf("%d conversations of %d messages or more", len(used), least)
	}
	used = used[:3]
	want := map[string]*conversation.Conversation{}
	for i := range used {
		want[natstest.CaseID(i)] = conversation.NewConversation()
	}
	send := func(i int, m *conversation.Message) {
		t.Helper()
		if _, err := c.Send(ctx, natstest.CaseID(i), streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
		if err := want[natstest.CaseID(i)].Append(m); err != nil {
			t.Fatal(err)
		}
	}
	reader := sdkmetric.NewManualReader()
	a := StartWorker(t, nc, WithCacheConversations(1), WithLanes(1),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	// Half of each conversation, one after the other: each is evicted by
	// the next once its events are applied.
	for i, cc := range used {
		for _, m := range cc.Msgs[:len(cc.Msgs)/2] {
			send(i, m)
		}
		natstest.WaitCaughtUp(t, c, natstest.CaseID(i), 30*time.Second)
	}
	// The rest, round robin: each event evicts a conversation and rebuilds
	// another, from its checkpoint and the few events after it.
	for k := 0; ; k++ {
		more := false
		for i, cc := range used {
			if k < len(cc.Msgs) {
				more = true
				if k >= len(cc.Msgs)/2 {
					send(i, cc.Msgs[k])
				}
			}
		}
		if !more {
			break
		}
	}
	natstest.CheckStored(t, c, want, 30*time.Second)
	rm := natstest.Collect(t, reader)
	written := sumWhere(rm, MetricCheckpoints, "outcome", "written")
	fromCheckpoint := sumWhere(rm, MetricRebuilds, "from", "checkpoint")
	t.Logf("worker A: checkpoints written %d, rebuilds from a checkpoint %d, from the first event %d",
		written, fromCheckpoint, sumWhere(rm, MetricRebuilds, "from", "events"))
	if written < int64(len(used)-1) || fromCheckpoint < 1 {
		t.Errorf("evictions wrote %d checkpoints and %d rebuilds used one", written, fromCheckpoint)
	}
	a.Stop(t)
	// Every conversation has a checkpoint: the first half of each was
	// written when the next one evicted it, and the stop wrote those due.
	for i := range used {
		if _, _, ok := storedCheckpoint(t, a.W, natstest.CaseID(i)); !ok {
			t.Fatalf("no checkpoint of %s", natstest.CaseID(i))
		}
	}

	// A second worker: each conversation's next event is rebuilt from the
	// checkpoint alone.
	reader = sdkmetric.NewManualReader()
	StartWorker(t, nc, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	for i := range used {
		send(i, conversation.MustMessage(map[string]any{"id": "after-restart", "role": "user", "content": "again",
			"parentId": used[i].Msgs[len(used[i].Msgs)-1].ID()}))
	}
	natstest.CheckStored(t, c, want, 30*time.Second)
	rm = natstest.Collect(t, reader)
	if got := sumWhere(rm, MetricRebuilds, "from", "checkpoint"); got != int64(len(used)) {
		t.Errorf("after the restart, %d rebuilds from a checkpoint, want %d (from events: %d)",
			got, len(used), sumWhere(rm, MetricRebuilds, "from", "events"))
	}
}

// conversationCheckpoint returns what a checkpoint of conv at sequence seq
// holds, as capture takes it from a worker's state.
func conversationCheckpoint(conv *conversation.Conversation, seq, version, events uint64) *checkpointOf {
	return &checkpointOf{msgs: conv.Messages(), groups: conv.Groups(), seq: seq, version: version, events: events}
}

// storedCheckpoint reads and decodes the checkpoint w's bucket holds for
// conversation id; ok is false when it cannot be read (none yet). One that
// does not decode fails the test.
func storedCheckpoint(t testing.TB, w *Worker, id string) (cp *checkpoint, conv *conversation.Conversation, ok bool) {
	t.Helper()
	entry, err := w.cp.bucket.Get(context.Background(), id)
	if err != nil {
		return nil, nil, false
	}
	if cp, conv, err = decodeCheckpoint(entry.Value()); err != nil {
		t.Fatalf("checkpoint of %s: %v", id, err)
	}
	return cp, conv, true
}

// sumWhere adds up the data points of the int64 counter name whose
// attribute key has value.
func sumWhere(rm metricdata.ResourceMetrics, name, key, value string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != name {
				continue
			}
			for _, dp := range s.DataPoints {
				if v, ok := dp.Attributes.Value(attribute.Key(key)); ok && v.AsString() == value {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestCheckpointsOff: a worker without checkpoints needs no bucket.
func TestCheckpointsOff(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	r := StartWorker(t, nc, WithCheckpoints(false))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(context.Background(), r.W.cfg.subjects.CheckpointBucket()); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("checkpoint bucket with checkpoints off: %v", err)
	}
}

// TestCheckpointsOffWorks runs a worker without checkpoints through every
// path that writes or reads one with them on: stores (of a busy
// conversation too), evictions for room (one conversation cached),
// rebuilds, compaction of quiet conversations and a graceful stop. Its checkpointer is nil (see checkpointer), which
// each of them must take as nothing due and nothing to read: every
// snapshot is right, every rebuild replays its events, and no checkpoint
// is counted.
func TestCheckpointsOffWorks(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithCheckpoints(false), WithCacheConversations(1), WithLanes(1),
		WithCacheIdle(100*time.Millisecond), WithSnapshotInterval(10*time.Millisecond),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if r.W.cp != nil {
		t.Fatal("a checkpointer with checkpoints off")
	}
	send, want := chainedSender(t, c)
	const convs = 3
	sendRounds(send, "off", convs, 0, 6) // each event evicts one and rebuilds another
	natstest.CheckStored(t, c, want, 30*time.Second)
	natstest.WaitFor(t, 10*time.Second, "the conversation held compacted", func() bool { return coldStates(t, r.W) == 1 })
	sendRounds(send, "off", convs, 6, 8)
	sendRounds(send, "busy", 1, 0, 2*checkpointBusyEvents) // stored again and again, held
	natstest.CheckStored(t, c, want, 30*time.Second)
	r.Stop(t)
	rm := natstest.Collect(t, reader)
	for _, outcome := range []string{"written", "failed", "skipped", "busy"} {
		if n := sumWhere(rm, MetricCheckpoints, "outcome", outcome); n != 0 {
			t.Errorf("%d checkpoints counted %s with checkpoints off", n, outcome)
		}
	}
	events, fromCheckpoint := sumWhere(rm, MetricRebuilds, "from", "events"), sumWhere(rm, MetricRebuilds, "from", "checkpoint")
	t.Logf("rebuilds from events %d, evictions %d", events, sumWhere(rm, MetricCacheEvictions, "reason", "room"))
	if events < convs || fromCheckpoint != 0 {
		t.Errorf("rebuilds: %d from events, %d from a checkpoint; want at least %d and 0", events, fromCheckpoint, convs)
	}
}

// TestQuietConversationsAreCheckpointed: a conversation unused for the
// cache's idle time is checkpointed as it is compacted, with no eviction
// and no stop, so that a crash after it loses no checkpoint.
func TestQuietConversationsAreCheckpointed(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	r := StartWorker(t, nc, WithCacheIdle(100*time.Millisecond))
	want := conversation.NewConversation()
	for i := range 16 {
		m := conversation.MustMessage(map[string]any{"id": fmt.Sprint("q", i), "role": "user", "content": "quiet"})
		if _, err := c.Send(ctx, "quiet", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
		if err := want.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	last := natstest.LastEventSeq(t, c, "quiet")
	natstest.WaitFor(t, 10*time.Second, "a checkpoint of the quiet conversation", func() bool {
		cp, conv, ok := storedCheckpoint(t, r.W, "quiet")
		return ok && cp.Seq == last && mustMarshal(t, mustResult(t, conv)) == mustMarshal(t, mustResult(t, want))
	})
}

// TestBusyConversationsAreCheckpointed: a conversation never let go of is
// checkpointed along with its snapshot stores once enough has changed, so
// that after a crash (which writes no checkpoint) its rebuild starts
// there.
func TestBusyConversationsAreCheckpointed(t *testing.T) {
	ns := natstest.StartServer(t, "")
	c := natstest.NewClient(t, natstest.Connect(t, ns))
	ctx := context.Background()
	ncA, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	a := StartWorker(t, ncA)
	want := conversation.NewConversation()
	send := func(i int) {
		t.Helper()
		fields := map[string]any{"id": fmt.Sprint("b", i), "role": "user", "content": "busy"}
		if i > 0 {
			fields["parentId"] = fmt.Sprint("b", i-1)
		}
		m := conversation.MustMessage(fields)
		if _, err := c.Send(ctx, "busy", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
		if err := want.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	n := 2 * checkpointBusyEvents
	for i := range n {
		send(i)
	}
	natstest.WaitCaughtUp(t, c, "busy", 30*time.Second)
	natstest.WaitFor(t, 10*time.Second, "a checkpoint of the busy conversation", func() bool {
		cp, _, ok := storedCheckpoint(t, a.W, "busy")
		return ok && cp.Events >= checkpointBusyEvents
	})
	// A crash: no stop, no checkpoint written on the way out.
	ncA.Close()
	<-a.Done()
	reader := sdkmetric.NewManualReader()
	StartWorker(t, natstest.Connect(t, ns), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	send(n)
	natstest.CheckStored(t, c, map[string]*conversation.Conversation{"busy": want}, 30*time.Second)
	rm := natstest.Collect(t, reader)
	if got := sumWhere(rm, MetricRebuilds, "from", "checkpoint"); got != 1 {
		t.Errorf("after the crash, %d rebuilds from a checkpoint, want 1 (from events: %d)", got, sumWhere(rm, MetricRebuilds, "from", "events"))
	}
}

// TestHandOffWritesCheckpoints: a worker handing a partition off to a new
// worker checkpoints the partition's conversations as it lets them go,
// and the new owner rebuilds them from those checkpoints.
func TestHandOffWritesCheckpoints(t *testing.T) {
	ns := natstest.StartServer(t, "")
	c := natstest.NewClient(t, natstest.Connect(t, ns))
	a := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, tracetest.NewSpanRecorder())...)
	sent := newAppends(t, c)
	const convs, events = 12, 16
	for k := range convs {
		conv := fmt.Sprintf("hc-%02d", k)
		for i := range events {
			msg := map[string]any{"id": fmt.Sprint("m", i), "role": "user", "content": "before the hand-off"}
			if i > 0 {
				msg["parentId"] = fmt.Sprint("m", i-1)
			}
			sent.send(conv, fmt.Sprintf("%s-e%d", conv, i), msg)
		}
	}
	sent.waitApplied()
	natstest.WaitFor(t, 10*time.Second, "worker A owns both partitions", func() bool { return len(a.W.OwnedPartitions()) == 2 })

	reader := sdkmetric.NewManualReader()
	b := StartWorker(t, natstest.Connect(t, ns), handoverOptions(2, tracetest.NewSpanRecorder(),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))...)
	natstest.WaitFor(t, 20*time.Second, "a partition handed off", func() bool { return len(a.W.OwnedPartitions()) == 1 })
	kept := a.W.OwnedPartitions()[0]
	handed := 0
	for k := range convs {
		conv := fmt.Sprintf("hc-%02d", k)
		if streams.PartitionOf(conv, 2) == kept {
			continue
		}
		handed++
		// The writes go on in the background.
		natstest.WaitFor(t, 10*time.Second, conv+"'s checkpoint, handed off", func() bool {
			cp, _, ok := storedCheckpoint(t, a.W, conv)
			if !ok {
				return false
			}
			if cp.Seq != sent.last[conv] {
				t.Fatalf("%s: checkpoint at %d, want its last event %d", conv, cp.Seq, sent.last[conv])
			}
			return true
		})
	}
	for k := range convs {
		conv := fmt.Sprintf("hc-%02d", k)
		sent.send(conv, conv+"-after", map[string]any{"id": "after", "role": "assistant", "content": "after the hand-off",
			"parentId": fmt.Sprint("m", events-1)})
	}
	sent.waitApplied() // and compares each snapshot with Parse
	natstest.WaitFor(t, 10*time.Second, "worker B owns a partition", func() bool { return len(b.W.OwnedPartitions()) == 1 })
	if got := sumWhere(natstest.Collect(t, reader), MetricRebuilds, "from", "checkpoint"); got != int64(handed) {
		t.Errorf("worker B rebuilt %d conversations from a checkpoint, want the %d handed off", got, handed)
	}
}

// TestCheckpointOutlivesDroppedEvents: events the stream no longer holds
// (its limits dropped them) are still in a conversation rebuilt from a
// checkpoint written before, whether later events remain or none do.
func TestCheckpointOutlivesDroppedEvents(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.TestLogger(t)))
	var seqs []uint64
	send := func(i int) {
		t.Helper()
		msg := map[string]any{"id": fmt.Sprint("d", i), "role": "user", "content": "kept"}
		sent, err := c.Send(ctx, "dropped", streams.TypeMessageAppended, msg)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, sent.Sequence)
	}
	for i := range 10 {
		send(i)
	}
	base, err := w.rebuild(ctx, "dropped", seqs[9]+1, false)
	if err != nil {
		t.Fatal(err)
	}
	value, err := conversationCheckpoint(base.conv, base.seen, base.last, uint64(base.n)).encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.cp.bucket.Put(ctx, "dropped", value); err != nil {
		t.Fatal(err)
	}
	// As a limit would: the oldest events go.
	for _, seq := range seqs[:5] {
		if err := w.stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	send(10)
	r, err := w.rebuild(ctx, "dropped", seqs[10]+1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !r.checkpoint || r.conv.Len() != 11 {
		t.Errorf("later events kept: from a checkpoint %v, %d messages, want 11", r.checkpoint, r.conv.Len())
	}
	// Every event gone: the checkpoint alone.
	for _, seq := range seqs[5:] {
		if err := w.stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	if r, err = w.rebuild(ctx, "dropped", seqs[10]+1, true); err != nil {
		t.Fatal(err)
	}
	if !r.checkpoint || r.conv.Len() != 10 {
		t.Errorf("no event kept: from a checkpoint %v, %d messages, want 10", r.checkpoint, r.conv.Len())
	}
}

// TestCheckpointSlotsRunEveryQueuedWrite drives the checkpoint slots and
// their queue from many goroutines at once, with writes of varying length,
// each tried again while the queue is full: every write is run once
// (none is left in the queue with no slot to run it), no more run at once
// than there are slots, and at the end every slot is given back.
func TestCheckpointSlotsRunEveryQueuedWrite(t *testing.T) {
	const slots, senders, each = 4, 8, 2000
	c := &checkpointer{slots: make(chan struct{}, slots), queue: make(chan func(), 16), writers: newWriters()}
	defer c.writers.stop()
	var taken, ran, running, most atomic.Int64
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				job := func() {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if (g+i)%7 == 0 {
						time.Sleep(10 * time.Microsecond)
					}
					running.Add(-1)
					ran.Add(1)
				}
				for !c.onSlot(job) { // the queue full: try again, as the next sweep would
					time.Sleep(20 * time.Microsecond)
				}
				taken.Add(1)
			}
		}()
	}
	wg.Wait()
	natstest.WaitFor(t, 10*time.Second, "every write taken run, every slot given back", func() bool {
		return ran.Load() == taken.Load() && len(c.slots) == 0 && len(c.queue) == 0
	})
	if most.Load() > slots {
		t.Errorf("%d writes ran at once on %d slots", most.Load(), slots)
	}
	t.Logf("%d writes run, at most %d at once", ran.Load(), most.Load())
}
