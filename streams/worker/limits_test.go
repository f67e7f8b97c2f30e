package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
)

// limitsConv is a conversation a limits test drives: the messages sent
// and those the worker is expected to keep.
type limitsConv struct {
	id   string
	kept []*conversation.Message
}

// send appends data to the conversation and, when keep is set, to what
// the worker is expected to keep.
func (lc *limitsConv) send(t testing.TB, c *client.Client, data map[string]any, keep bool) *client.Sent {
	t.Helper()
	sent, err := c.Send(context.Background(), lc.id, streams.TypeMessageAppended, data)
	if err != nil {
		t.Fatal(err)
	}
	if keep {
		m, err := conversation.NewMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		lc.kept = append(lc.kept, m)
	}
	return sent
}

// check waits until the worker has settled every event (acknowledged,
// or rejected and removed from the stream) and the stored snapshot covers
// the conversation's last event still in the stream, then requires it to
// be Parse of the messages kept. The last event is read again on each
// try: an event asked for again (to be applied measured after a refused
// store) shows neither as pending nor as unacknowledged for a while, and
// is removed from the stream only when it is refused.
func (lc *limitsConv) check(t testing.TB, c *client.Client, w *Worker, timeout time.Duration) *streams.Snapshot {
	t.Helper()
	ctx := context.Background()
	cons, err := w.js.Consumer(ctx, w.cfg.subjects.EventsStream(), w.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	var snap *streams.Snapshot
	natstest.WaitFor(t, timeout, lc.id+": every event settled and the snapshot at the last", func() bool {
		info, err := cons.Info(ctx)
		if err != nil || info.NumPending != 0 || info.NumAckPending != 0 || info.NumRedelivered != 0 {
			return false
		}
		s, err := c.Snapshot(ctx, lc.id)
		if err != nil {
			return false
		}
		snap = s
		return s.Version >= natstest.LastEventSeq(t, c, lc.id)
	})
	res, err := conversation.Parse(lc.kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, res); d != "" {
		t.Errorf("%s: stored snapshot differs from Parse of the events kept: %s", lc.id, d)
	}
	return snap
}

// rejections returns the codes of the rejections recorded, by sequence.
func rejections(t testing.TB, r *natstest.Recorder) map[uint64]streams.RejectCode {
	t.Helper()
	out := map[uint64]streams.RejectCode{}
	for _, e := range r.All() {
		if e.Err != nil || e.Event.Type() != streams.TypeEventRejected {
			continue
		}
		var rej streams.EventRejected
		if err := json.Unmarshal(e.Event.Data(), &rej); err != nil {
			t.Fatal(err)
		}
		out[rej.Sequence] = rej.Code
	}
	return out
}

// waitAcknowledged waits until the worker's consumer has no event pending
// or unacknowledged.
func waitAcknowledged(t testing.TB, w *Worker, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	cons, err := w.js.Consumer(ctx, w.cfg.subjects.EventsStream(), w.cfg.consumer)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, timeout, "every event acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

// gauge returns the last value of the int64 gauge name (0 when absent).
func gauge(rm metricdata.ResourceMetrics, name string) int64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name && len(g.DataPoints) > 0 {
				return g.DataPoints[0].Value
			}
		}
	}
	return 0
}

// readyz returns the status and body of w's /readyz.
func readyz(t testing.TB, w *Worker) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	w.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestDeepConversationDoesNotStallWorker: a conversation whose branch
// points nest past the limit had its events applied but its snapshot
// never stored, its events never acknowledged (the store was retried for
// ever), until they filled MaxAckPending and nothing else was served. Now
// each event that would nest them deeper is rejected too_deep, the
// conversation keeps the rest, every event is acknowledged, the
// conversation is listed as degraded (gauge and /readyz, still 200), and
// ten other conversations converge; after a restart too.
func TestDeepConversationDoesNotStallWorker(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	const depth = 20
	limits := DefaultLimits()
	limits.MaxBranchDepth = depth
	opts := []Option{WithLimits(limits)}
	r := StartWorker(t, nc, append(opts, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))...)
	c := natstest.NewClient(t, nc)
	deep := &limitsConv{id: "deep"}
	errs := natstest.Record(t, nc, r.W.cfg.subjects.Errors(deep.id))

	// m0 → m1 → … each with a second child l<i>: m<i> is a branch point
	// nested i+1 deep once l<i> is there. Those past the limit are refused,
	// and the chain goes on.
	deep.send(t, c, map[string]any{"id": "m0", "role": "user", "content": "root"}, true)
	refused := map[uint64]bool{}
	const levels = 30
	for i := range levels {
		deep.send(t, c, map[string]any{"id": fmt.Sprintf("m%d", i+1), "parentId": fmt.Sprintf("m%d", i), "role": "user", "content": "next"}, true)
		// The branch points above l<i>: the m<j> of j < i that kept their
		// l<j> (all of those below the limit).
		over := min(i, depth)+1 > depth
		sent := deep.send(t, c, map[string]any{"id": fmt.Sprintf("l%d", i), "parentId": fmt.Sprintf("m%d", i), "role": "assistant", "content": "leaf"}, !over)
		if over {
			refused[sent.Sequence] = true
		}
	}
	// Updates that nest nothing deeper are applied.
	for i := range 50 {
		data := map[string]any{"id": "m3", "content": fmt.Sprintf("edit %d", i)}
		if _, err := c.Send(context.Background(), deep.id, streams.TypeMessageUpdated, data); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range deep.kept {
		if m.ID() == "m3" {
			edited, err := conversation.NewMessage(map[string]any{"id": "m3", "parentId": "m2", "role": "user", "content": "edit 49"})
			if err != nil {
				t.Fatal(err)
			}
			deep.kept[i] = edited
		}
	}

	others := make([]*limitsConv, 10)
	for i := range others {
		others[i] = &limitsConv{id: fmt.Sprintf("other%d", i)}
		for j := range 5 {
			data := map[string]any{"id": fmt.Sprintf("o%d", j), "role": "user", "content": "hi"}
			if j > 0 {
				data["parentId"] = fmt.Sprintf("o%d", j-1)
			}
			others[i].send(t, c, data, true)
		}
	}
	start := time.Now()
	for _, o := range others {
		o.check(t, c, r.W, 30*time.Second)
	}
	t.Logf("10 other conversations converged %v after the last publish", time.Since(start).Round(time.Millisecond))
	deep.check(t, c, r.W, 30*time.Second)
	waitAcknowledged(t, r.W, 30*time.Second)

	got := rejections(t, errs)
	for seq := range refused {
		if got[seq] != streams.CodeTooDeep {
			t.Errorf("event %d: rejection %q, want %q", seq, got[seq], streams.CodeTooDeep)
		}
	}
	if len(got) != len(refused) {
		t.Errorf("%d rejections, want %d: %v", len(got), len(refused), got)
	}
	if g := gauge(natstest.Collect(t, reader), MetricConversationsDegraded); g != 1 {
		t.Errorf("%s = %d, want 1", MetricConversationsDegraded, g)
	}
	if code, body := readyz(t, r.W); code != http.StatusOK || !strings.Contains(body, "deep: too_deep") {
		t.Errorf("/readyz: %d %q, want 200 naming the degraded conversation", code, body)
	}

	// A new worker serves them all: the refused events are gone from the
	// stream, and the kept ones rebuild without them.
	r.Stop(t)
	r = StartWorker(t, nc, opts...)
	for _, o := range others {
		o.send(t, c, map[string]any{"id": "after", "parentId": "o4", "role": "user", "content": "again"}, true)
	}
	deep.send(t, c, map[string]any{"id": "after", "parentId": fmt.Sprintf("m%d", levels), "role": "user", "content": "again"}, true)
	for _, o := range others {
		o.check(t, c, r.W, 30*time.Second)
	}
	deep.check(t, c, r.W, 30*time.Second)
	waitAcknowledged(t, r.W, 30*time.Second)
}

// TestSnapshotOverLimitRejected: a context tree that took the stored
// snapshot past --max-snapshot-bytes left the bucket at the last version
// that fitted while later events were applied and acknowledged. Now the
// event that would take it past the limit is rejected
// snapshot_too_large, and the bucket holds every event applied.
func TestSnapshotOverLimitRejected(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	const limit = 2000
	r := StartWorker(t, nc, WithSnapshotInterval(0), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithLimits(Limits{MaxEventBytes: DefaultMaxEventBytes, MaxMessages: DefaultMaxMessages, MaxSnapshotBytes: limit}))
	c := natstest.NewClient(t, nc)
	big := &limitsConv{id: "big"}
	errs := natstest.Record(t, nc, r.W.cfg.subjects.Errors(big.id))
	// A message adds about 50 bytes to the flat list and 40 to the context
	// tree: 32 make a snapshot of about 2,850 bytes, whose flat list
	// alone is under 2,000.
	const msgs = 32
	fits := 0
	refused := map[uint64]bool{}
	for i := range msgs {
		data := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": "x"}
		if i > 0 {
			data["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		// Whether the snapshot with this message fits: Parse and encode it.
		m, err := conversation.NewMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		res, err := conversation.Parse(append(big.kept[:len(big.kept):len(big.kept)], m), nil)
		if err != nil {
			t.Fatal(err)
		}
		seq := lastSeqOrZero(c) + 1
		value, err := encodeSnapshot(big.id, seq, seq, res)
		if err != nil {
			t.Fatal(err)
		}
		// The worker counts the flatList's entries with a comma each.
		keep := len(value)+1 <= limit
		if keep {
			fits++
		}
		if sent := big.send(t, c, data, keep); !keep {
			refused[sent.Sequence] = true
		}
	}
	if fits == msgs || fits < 10 {
		t.Fatalf("%d of %d messages fit: the test wants the limit crossed midway", fits, msgs)
	}
	snap := big.check(t, c, r.W, 10*time.Second)
	waitAcknowledged(t, r.W, 10*time.Second)
	rejected := rejections(t, errs)
	for seq, code := range rejected {
		if code != streams.CodeSnapshotTooLarge || !refused[seq] {
			t.Errorf("event %d rejected %q, want only those over the limit, %q", seq, code, streams.CodeSnapshotTooLarge)
		}
	}
	if len(rejected) != len(refused) {
		t.Errorf("%d rejections, want %d", len(rejected), len(refused))
	}
	writes := func(outcome string) int64 {
		return sumWhere(natstest.Collect(t, reader), MetricSnapshotWrites, "outcome", outcome)
	}
	if n := writes("too_large") + writes("refused") + writes("failed"); n != 0 {
		t.Errorf("%d writes refused or failed", n)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stored version %d, %d of %d messages, about %d bytes", snap.Version, fits, msgs, len(raw))
	if got := r.W.Degraded(); len(got) != 1 || got[0].ConversationID != big.id || got[0].Code != streams.CodeSnapshotTooLarge {
		t.Errorf("degraded: %+v", got)
	}
}

// TestSnapshotNearMaxPayload: a snapshot a few bytes under the server's
// max payload, which its write's headers and subject take over, failed
// its write for ever, its event never acknowledged. Now the event is
// rejected snapshot_too_large (the limit counts what the server counts),
// one that leaves room for them is stored, and the conversation goes on.
func TestSnapshotNearMaxPayload(t *testing.T) {
	const maxPayload = 64 << 10
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(), MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r := StartWorker(t, nc)
	c := natstest.NewClient(t, nc)

	// Two messages, each about half of the snapshot (an event of it all
	// would be over the max payload itself), the second sized so that the
	// snapshot is under bytes from the max payload.
	for _, tc := range []struct {
		id    string
		under int
		keep  bool
	}{
		{"near", 30, false},   // value fits max_payload, the write does not
		{"roomy", 1000, true}, // room for the headers and the subject, and for the next message
	} {
		lc := &limitsConv{id: tc.id}
		errs := natstest.Record(t, nc, r.W.cfg.subjects.Errors(lc.id))
		first := map[string]any{"id": "a", "role": "user", "content": strings.Repeat("a", maxPayload/2)}
		second := func(n int) map[string]any {
			return map[string]any{"id": "b", "parentId": "a", "role": "assistant", "content": strings.Repeat("b", n)}
		}
		size := func(n int) int {
			var msgs []*conversation.Message
			for _, d := range []map[string]any{first, second(n)} {
				m, err := conversation.NewMessage(d)
				if err != nil {
					t.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			res, err := conversation.Parse(msgs, nil)
			if err != nil {
				t.Fatal(err)
			}
			seq := lastSeqOrZero(c) + 2 // the second message's event
			value, err := encodeSnapshot(lc.id, seq, seq, res)
			if err != nil {
				t.Fatal(err)
			}
			return len(value)
		}
		n := maxPayload - tc.under - size(0)
		lc.send(t, c, first, true)
		if got := size(n); got != maxPayload-tc.under {
			t.Fatalf("snapshot of %d bytes, want %d", got, maxPayload-tc.under)
		}
		sent := lc.send(t, c, second(n), tc.keep)
		lc.check(t, c, r.W, 20*time.Second)
		if !tc.keep { // the record is stored before the event is removed, but may arrive after
			natstest.WaitFor(t, 10*time.Second, "the rejection", func() bool { return len(rejections(t, errs)) > 0 })
		}
		got := rejections(t, errs)
		if tc.keep && len(got) != 0 || !tc.keep && got[sent.Sequence] != streams.CodeSnapshotTooLarge {
			t.Errorf("%s: rejections %v (event %d)", lc.id, got, sent.Sequence)
		}
		// The conversation goes on.
		lc.send(t, c, map[string]any{"id": "c", "parentId": "a", "role": "user", "content": "small"}, true)
		lc.check(t, c, r.W, 20*time.Second)
	}
}

// lastSeqOrZero returns the events stream's last sequence.
func lastSeqOrZero(c *client.Client) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		return 0
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.LastSeq
}

// TestStoreRefusedBySize: a snapshot write the server refuses for its
// size (here the bucket's maximum message size, lowered while the worker
// runs) was retried for ever, its events never acknowledged. Now the
// worker learns the limit from the refusal: the events are applied again,
// measured against it, and those that would take the snapshot past it are
// rejected snapshot_too_large; the bucket holds the rest, and other
// conversations carry on.
func TestStoreRefusedBySize(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	capped := &limitsConv{id: "capped"}
	errs := natstest.Record(t, nc, r.W.cfg.subjects.Errors(capped.id))
	var sent []*client.Sent
	msg := func(i int) map[string]any {
		data := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": strings.Repeat("x", 100)}
		if i > 0 {
			data["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		return data
	}
	for i := range 3 {
		sent = append(sent, capped.send(t, c, msg(i), true))
	}
	snap := capped.check(t, c, r.W, 10*time.Second)
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}

	// The bucket now takes about three messages more than it holds.
	stream, err := r.W.js.Stream(ctx, "KV_"+r.W.cfg.subjects.SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgSize = int32(len(raw) + 900)
	if _, err := r.W.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	all := []map[string]any{msg(0), msg(1), msg(2)}
	for i := 3; i < 10; i++ {
		all = append(all, msg(i))
		sent = append(sent, capped.send(t, c, msg(i), false))
	}
	other := &limitsConv{id: "other"}
	other.send(t, c, map[string]any{"id": "o", "role": "user", "content": "hi"}, true)

	waitAcknowledged(t, r.W, 60*time.Second)
	rejected := rejections(t, errs)
	capped.kept = nil
	for i, s := range sent {
		if code, ok := rejected[s.Sequence]; ok {
			if code != streams.CodeSnapshotTooLarge {
				t.Errorf("event %d rejected %q, want %q", s.Sequence, code, streams.CodeSnapshotTooLarge)
			}
			continue
		}
		m, err := conversation.NewMessage(all[i])
		if err != nil {
			t.Fatal(err)
		}
		capped.kept = append(capped.kept, m)
	}
	if len(rejected) == 0 || len(capped.kept) < 4 {
		t.Errorf("%d events rejected, %d kept: want the limit crossed midway", len(rejected), len(capped.kept))
	}
	capped.check(t, c, r.W, 10*time.Second)
	other.check(t, c, r.W, 10*time.Second)
	if n := sumWhere(natstest.Collect(t, reader), MetricSnapshotWrites, "outcome", "too_large"); n == 0 {
		t.Error("no write counted too_large")
	}
	if got := r.W.Degraded(); len(got) != 1 || got[0].ConversationID != capped.id {
		t.Errorf("degraded: %+v", got)
	}
	t.Logf("%d of %d events kept; degraded: %+v", len(capped.kept), len(sent), r.W.Degraded())
}

// TestAckSequence: the sequence terminateAll reads from an event's ack
// subject is the one JetStream gives in its metadata.
func TestAckSequence(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	w := provisionedWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.Send(ctx, "acks", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := w.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "acks", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		if seq, ok := ackSequence(pendingAckOf(m)); !ok || seq != meta.Sequence.Stream {
			t.Errorf("ackSequence(%q) = %d, %v; want %d", m.Reply(), seq, ok, meta.Sequence.Stream)
		}
	}
	if n != 3 {
		t.Fatalf("fetched %d events, want 3: %v", n, batch.Error())
	}
	for _, reply := range []string{
		"$JS.ACK.S.C.1.42.7.1700000000000000000.0",
		"$JS.ACK.domain.hash.S.C.1.42.7.1700000000000000000.0",
		"$JS.ACK.domain.hash.S.C.1.42.7.1700000000000000000.0.token",
	} {
		if seq, ok := ackSequence(pendingAck(reply)); !ok || seq != 42 {
			t.Errorf("ackSequence(%q) = %d, %v; want 42", reply, seq, ok)
		}
	}
	if _, ok := ackSequence(pendingAck("_INBOX.x")); ok {
		t.Error("a subject that is not an ack subject gave a sequence")
	}
}
