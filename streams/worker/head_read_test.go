package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// readAllWays reads the snapshot of id every way a worker reads one and
// requires the same answer from each.
func readAllWays(t testing.TB, w *Worker, id string) (value string, rev uint64) {
	t.Helper()
	ctx := context.Background()
	first := true
	for _, how := range []headRead{headDirect, headConfirmed, headFromLeader} {
		v, r, err := w.readStored(ctx, id, how)
		if err != nil {
			t.Fatalf("%s (%s): %v", id, how, err)
		}
		if !first && (string(v) != value || r != rev) {
			t.Fatalf("%s: %s read %.40q at %d, direct %.40q at %d", id, how, v, r, value, rev)
		}
		value, rev, first = string(v), r, false
	}
	return value, rev
}

// TestReadStored reads snapshots of the bucket every way a worker reads
// them and requires the same answers: none for a key never written, the
// value and revision of the last write, none once deleted or purged.
func TestReadStored(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	if w.heads.how != headDirect {
		t.Fatalf("the bucket of a single server is read %s", w.heads.how)
	}
	ctx := context.Background()
	if v, rev := readAllWays(t, w, "none"); v != "" || rev != 0 {
		t.Errorf("a key never written: %q at %d", v, rev)
	}
	for _, id := range []string{"a", "b", "c"} {
		for i := range 3 {
			value := fmt.Sprintf(`{"conversationId":%q,"version":%d,"sequence":%d}`, id, i, i)
			rev, err := w.snapshots.kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			if v, r := readAllWays(t, w, id); v != value || r != rev {
				t.Errorf("%s: %q at %d, want %q at %d", id, v, r, value, rev)
			}
		}
	}
	if err := w.snapshots.kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.snapshots.kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if v, rev := readAllWays(t, w, id); v != "" || rev != 0 {
			t.Errorf("%s removed: %q at %d", id, v, rev)
		}
	}
	if _, rev := readAllWays(t, w, "c"); rev == 0 {
		t.Error("c: gone with the others")
	}
}

// TestConfirm hands confirm a replica's answer that the leader has moved
// past, as a lagging replica would give: it returns the leader's last
// value, or none once the key is deleted, and the answer itself only while
// it is the last.
func TestConfirm(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	ctx := context.Background()
	bucket := w.cfg.subjects.SnapshotBucket()
	stream, key := "KV_"+bucket, "$KV."+bucket+".c"
	put := func(value string) (*jetstream.RawStreamMsg, uint64) {
		t.Helper()
		rev, err := w.snapshots.kv.Put(ctx, "c", []byte(value))
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := w.directGet(ctx, stream, msgGetRequest{LastFor: key})
		if err != nil || m.Sequence != rev {
			t.Fatalf("direct get after a put at %d: %v, %v", rev, m, err)
		}
		return m, rev
	}
	// Another key's writes after the answer are not the key's.
	old, _ := put(`{"version":1}`)
	if _, err := w.snapshots.kv.Put(ctx, "other", []byte(`{"version":9}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := w.confirm(ctx, stream, key, old); err != nil || got != old {
		t.Fatalf("the last value: %v, %v", got, err)
	}
	_, rev2 := put(`{"version":2}`)
	_, rev3 := put(`{"version":3}`)
	got, err := w.confirm(ctx, stream, key, old)
	if err != nil || got.Sequence != rev3 || string(got.Data) != `{"version":3}` {
		t.Fatalf("two writes past the answer: %v, %v; want revision %d (not %d)", got, err, rev3, rev2)
	}
	last := got
	if err := w.snapshots.kv.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if got, err := w.confirm(ctx, stream, key, last); err != nil || got.Header.Get(kvOperation) != "DEL" {
		t.Fatalf("after a delete: %v, %v", got, err)
	}
}

// TestReadStoredInACluster reads the snapshots of a bucket with three
// replicas, written through one server, through one that does not lead
// the bucket: the worker reads them confirmed, and every read returns the
// last write before it, as the leader's reads do, however far the replica
// that answered the direct get lagged.
func TestReadStoredInACluster(t *testing.T) {
	servers := natstest.StartCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
	writer := provisionedWorker(t, connect(t, servers[0]), WithStorage(storage), WithLogger(testLogger(t)))
	reader := provisionedWorker(t, connect(t, writer.notBucketLeader(t, servers)), WithStorage(storage), WithLogger(testLogger(t)))
	if reader.heads.how != headConfirmed {
		t.Fatalf("a bucket of three replicas is read %s", reader.heads.how)
	}
	ctx := context.Background()
	bucket := "KV_" + reader.cfg.subjects.SnapshotBucket()
	behind := 0
	const convs, rounds = 4, 50
	for round := range rounds {
		for i := range convs {
			id := fmt.Sprint("c", i)
			value := fmt.Sprintf(`{"version":%d,"sequence":%d}`, round+1, round+1)
			rev, err := writer.snapshots.kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			// How often a replica answers behind the leader, for the log.
			if m, _, err := reader.directGet(ctx, bucket, msgGetRequest{LastFor: "$KV." + reader.cfg.subjects.SnapshotBucket() + "." + id}); err != nil || m.Sequence < rev {
				behind++
			}
			got, gotRev, err := reader.readStored(ctx, id, headConfirmed)
			if err != nil || string(got) != value || gotRev != rev {
				t.Fatalf("%s: %q at %d (%v), want %q at %d", id, got, gotRev, err, value, rev)
			}
		}
	}
	t.Logf("direct gets answered behind the last write: %d of %d", behind, convs*rounds)
	if v, rev, err := reader.readStored(ctx, "none", headConfirmed); err != nil || v != nil || rev != 0 {
		t.Errorf("a key never written: %q at %d, %v", v, rev, err)
	}
}

// TestTakeOverLongConversationsInACluster has a worker apply long
// conversations to a bucket of three replicas and stop, and a second
// worker, connected to a server that does not lead the bucket, apply one
// more event to each. The second worker starts with the mean size of the
// bucket's values, past DefaultHeadsConfirmedFrom, so it reads every head
// confirmed, the first it loads too. Every stored snapshot ends equal to
// Parse of its conversation.
func TestTakeOverLongConversationsInACluster(t *testing.T) {
	servers := natstest.StartCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
	nc := connect(t, servers[0])
	c := newClient(t, nc)
	first := startWorker(t, nc, WithStorage(storage), WithLogger(testLogger(t)))
	// 16 of about 160 KB.
	const convs, msgs = 16, 150
	want := map[string]*conversation.Conversation{}
	ids := make([]string, convs)
	for k := range convs {
		ids[k] = fmt.Sprint("long-", k)
		want[ids[k]] = conversation.NewConversation()
	}
	content := strings.Repeat("x", 1000)
	last := map[string]uint64{} // see checkStoredAt
	check := func() {
		t.Helper()
		checkStoredAt(t, c, want, last, 30*time.Second)
	}
	send := func(i int) {
		t.Helper()
		for _, conv := range ids {
			last[conv] = sendChainedAs(t, c, want[conv], conv, i, []string{"user", "assistant"}[i%2], content).Sequence
		}
	}
	for i := range msgs {
		send(i)
	}
	check()
	first.stop(t)

	// The confirmations, seen as requests to the bucket's leader.
	var confirms atomic.Int64
	sub, err := nc.Subscribe("$JS.API.STREAM.MSG.GET.KV_"+first.w.cfg.subjects.SnapshotBucket(), func(m *nats.Msg) {
		if strings.Contains(string(m.Data), `"next_by_subj"`) {
			confirms.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	second := startWorker(t, connect(t, first.w.notBucketLeader(t, servers)), WithStorage(storage), WithLogger(testLogger(t)))
	send(msgs)
	check()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("loads confirmed: %d of %d (mean %d bytes)", confirms.Load(), convs, second.w.heads.mean.Load())
	if second.w.heads.how != headConfirmed || confirms.Load() != convs {
		t.Errorf("the second worker reads heads %s; %d of %d loads confirmed, want all", second.w.heads.how, confirms.Load(), convs)
	}
}

// TestHeadReader checks when a replicated bucket's heads are read
// confirmed: once the snapshots read are large on average, and from the
// leader again once new and short ones have brought the mean down. A
// bucket of one replica, or one without direct gets, is read its one way.
func TestHeadReader(t *testing.T) {
	h := &headReader{how: headConfirmed, from: DefaultHeadsConfirmedFrom}
	if got := h.pick(); got != headFromLeader {
		t.Errorf("a worker that read nothing yet: %s", got)
	}
	h.add(2 << 20)
	if got := h.pick(); got != headConfirmed {
		t.Errorf("after a snapshot of 2 MiB: %s", got)
	}
	for _, how := range []headRead{headDirect, headFromLeader} {
		other := &headReader{how: how, from: DefaultHeadsConfirmedFrom}
		other.add(2 << 20)
		if got := other.pick(); got != how {
			t.Errorf("%s read %s", how, got)
		}
	}
	reads := 0
	for ; h.pick() == headConfirmed; reads++ {
		h.add(0)
	}
	if reads < 10 || reads > 40 {
		t.Errorf("%d conversations without a snapshot took the mean back under %d: want 10 to 40", reads, DefaultHeadsConfirmedFrom)
	}
	for range 100 {
		h.add(DefaultHeadsConfirmedFrom * 2)
	}
	if got := h.pick(); got != headConfirmed {
		t.Errorf("snapshots of twice the threshold: %s", got)
	}
	if got := (&headReader{how: headConfirmed}).pick(); got != headConfirmed {
		t.Errorf("from 0, nothing read yet: %s", got)
	}
	cfg, err := configOf([]Option{WithHeadsConfirmedFrom(1 << 40)})
	if err != nil {
		t.Fatal(err)
	}
	never := &headReader{how: headConfirmed, from: cfg.headsFrom}
	never.add(64 << 20)
	if got := never.pick(); got != headFromLeader {
		t.Errorf("WithHeadsConfirmedFrom(1TiB), after 64 MiB: %s", got)
	}
	if err := CheckOptions(WithHeadsConfirmedFrom(-1)); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("a negative size: %v", err)
	}
}

// TestReadStoredPastAMirror reads snapshots from a bucket of one replica
// that a mirror with direct gets on answers for too: the direct gets go
// to either, and an answer from the mirror is not taken (the leader is
// asked), so every read, direct or confirmed, returns the bucket's own
// last value, even one the mirror does not have yet.
func TestReadStoredPastAMirror(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	ctx := context.Background()
	bucket := "KV_" + w.cfg.subjects.SnapshotBucket()
	const convs = 8
	for i := range convs {
		if _, err := w.snapshots.kv.Put(ctx, fmt.Sprint("c", i), []byte(`{"version":1,"sequence":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	mirror, err := w.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SNAPSHOTS_MIRROR",
		Mirror: &jetstream.StreamSource{Name: bucket}, AllowDirect: true, MirrorDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the mirror caught up", func() bool {
		info, err := mirror.Info(ctx)
		return err == nil && info.State.Msgs == convs
	})
	// Which of the two answers a direct get is the server's choice: ask
	// until the mirror has answered, then check every answer.
	mirrored := 0
	for i := 0; i < 200 && mirrored == 0; i++ {
		if _, from, err := w.directGet(ctx, bucket, msgGetRequest{LastFor: "$KV." + w.cfg.subjects.SnapshotBucket() + ".c0"}); err != nil {
			t.Fatal(err)
		} else if from != bucket {
			mirrored++
		}
	}
	if mirrored == 0 {
		t.Fatal("the mirror never answered a direct get for the bucket")
	}
	for round := range 20 {
		for i := range convs {
			id := fmt.Sprint("c", i)
			value := fmt.Sprintf(`{"version":%d,"sequence":%d}`, round+2, round+2)
			rev, err := w.snapshots.kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			for _, how := range []headRead{headDirect, headConfirmed} {
				got, gotRev, err := w.readStored(ctx, id, how)
				if err != nil || string(got) != value || gotRev != rev {
					t.Fatalf("%s (%s): %q at %d (%v), want %q at %d", id, how, got, gotRev, err, value, rev)
				}
			}
		}
	}
}

// BenchmarkReadStored reads the head of a stored snapshot as a worker
// loading a conversation does, every way it reads one: over the
// in-process connection of a worker with its embedded server (one
// replica), and in a cluster of three servers on loopback, from a bucket
// of three replicas through a server that is not its leader.
func BenchmarkReadStored(b *testing.B) {
	ns := startServer(b, "")
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	b.Run("one", func(b *testing.B) {
		benchmarkReadStored(b, provisionedWorker(b, nc, WithLogger(testLogger(b))))
	})
	b.Run("cluster", func(b *testing.B) {
		servers := natstest.StartCluster(b, 3)
		storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
		w := provisionedWorker(b, connect(b, servers[0]), WithStorage(storage), WithLogger(testLogger(b)))
		benchmarkReadStored(b, provisionedWorker(b, connect(b, w.notBucketLeader(b, servers)), WithStorage(storage), WithLogger(testLogger(b))))
	})
}

// notBucketLeader returns a server of servers that does not lead w's
// bucket.
func (w *Worker) notBucketLeader(tb testing.TB, servers []*server.Server) *server.Server {
	tb.Helper()
	status, err := w.snapshots.kv.Status(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	info := status.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		tb.Fatal("the bucket has no leader")
	}
	for _, ns := range servers {
		if ns.Name() != info.Cluster.Leader {
			return ns
		}
	}
	tb.Fatal("every server leads the bucket")
	return nil
}

// benchmarkReadStored times w's head reads of snapshots of 4 KiB, 256 KiB
// and 2 MiB and of a key never written, every way w's bucket can be read.
func benchmarkReadStored(b *testing.B, w *Worker) {
	ctx := context.Background()
	ways := []headRead{headConfirmed, headFromLeader}
	if w.heads.how == headDirect {
		ways = append(ways, headDirect)
	}
	entry := `{"id":"m","role":"user","content":"` + strings.Repeat("x", 256) + `"}`
	for _, size := range []int{4 << 10, 256 << 10, 2 << 20} {
		id := fmt.Sprintf("s%d", size)
		var sb strings.Builder
		sb.WriteString(`{"conversationId":"` + id + `","version":7,"sequence":9,"flatList":[` + entry)
		for sb.Len() < size {
			sb.WriteString("," + entry)
		}
		sb.WriteString(`],"contextTree":[]}`)
		value := sb.String()
		if _, err := w.snapshots.kv.Put(ctx, id, []byte(value)); err != nil {
			b.Fatal(err)
		}
		for _, how := range ways {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, how), func(b *testing.B) {
				b.SetBytes(int64(len(value)))
				for b.Loop() {
					h, rev, err := w.readHead(ctx, id, how)
					if err != nil || rev == 0 || h.Version != 7 {
						b.Fatal(h, rev, err)
					}
				}
			})
		}
	}
	// None stored: the read of every new conversation.
	for _, how := range ways {
		b.Run("none/"+how.String(), func(b *testing.B) {
			for b.Loop() {
				if _, rev, err := w.readHead(ctx, "none", how); err != nil || rev != 0 {
					b.Fatal(rev, err)
				}
			}
		})
	}
}

// TestHeadReaderStartsAtTheBucketMean checks that a head reader starts at
// the mean size of the values its bucket holds, and at 0 for an empty one.
func TestHeadReaderStartsAtTheBucketMean(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	ctx := context.Background()
	var h headReader
	h.start(ctx, w.snapshots.kv)
	if h.how != headDirect || h.mean.Load() != 0 {
		t.Fatalf("an empty bucket of one replica: read %s from a mean of %d", h.how, h.mean.Load())
	}
	const size = 40000
	for i := range 4 {
		if _, err := w.snapshots.kv.Put(ctx, fmt.Sprint("c", i), make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	h.start(ctx, w.snapshots.kv)
	// A stored value also holds its key and the stream's framing.
	if m := h.mean.Load(); m < size || m > size+256 {
		t.Errorf("values of %d bytes: a mean of %d", size, m)
	}
}
