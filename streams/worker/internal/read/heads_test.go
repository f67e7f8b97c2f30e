package read

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// confirmedFrom is the worker's default for Config.ConfirmedFrom
// (worker.DefaultHeadsConfirmedFrom).
const confirmedFrom = 32 << 10

// testSubjects are the default subjects, as a worker's.
func testSubjects(t testing.TB) streams.Subjects {
	t.Helper()
	s, err := streams.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bucket returns the snapshot bucket of replicas replicas, made over nc as
// a worker provisions it (History 1, file storage), or opened when it is.
func bucket(t testing.TB, nc *nats.Conn, replicas int) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := testSubjects(t).SnapshotBucket()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1,
		Storage: jetstream.FileStorage, Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// newReader returns a reader over nc of the snapshot bucket kv, whose
// heads are read confirmed from the worker's default.
func newReader(t testing.TB, nc *nats.Conn, kv jetstream.KeyValue) *Reader {
	t.Helper()
	return New(context.Background(), Config{Conn: nc, Subjects: testSubjects(t), Bucket: kv, ConfirmedFrom: confirmedFrom})
}

// notLeader returns a server of servers that does not lead kv.
func notLeader(t testing.TB, kv jetstream.KeyValue, servers []*server.Server) *server.Server {
	t.Helper()
	status, err := kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	info := status.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatal("the bucket has no leader")
	}
	for _, ns := range servers {
		if ns.Name() != info.Cluster.Leader {
			return ns
		}
	}
	t.Fatal("every server leads the bucket")
	return nil
}

// readAllWays reads the snapshot of id every way a Reader reads one and
// requires the same answer from each.
func readAllWays(t testing.TB, r *Reader, id string) (value string, rev uint64) {
	t.Helper()
	ctx := context.Background()
	first := true
	for _, how := range []Mode{Direct, Confirmed, Leader} {
		v, got, err := r.Snapshot(ctx, id, how)
		if err != nil {
			t.Fatalf("%s (%s): %v", id, how, err)
		}
		if !first && (string(v) != value || got != rev) {
			t.Fatalf("%s: %s read %.40q at %d, direct %.40q at %d", id, how, v, got, value, rev)
		}
		value, rev, first = string(v), got, false
	}
	return value, rev
}

// TestReadStored reads snapshots of the bucket every way a Reader reads
// them and requires the same answers: none for a key never written, the
// value and revision of the last write, none once deleted or purged.
func TestReadStored(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	kv := bucket(t, nc, 1)
	r := newReader(t, nc, kv)
	if r.Mode() != Direct {
		t.Fatalf("the bucket of a single server is read %s", r.Mode())
	}
	ctx := context.Background()
	if v, rev := readAllWays(t, r, "none"); v != "" || rev != 0 {
		t.Errorf("a key never written: %q at %d", v, rev)
	}
	for _, id := range []string{"a", "b", "c"} {
		for i := range 3 {
			value := fmt.Sprintf(`{"conversationId":%q,"version":%d,"sequence":%d}`, id, i, i)
			rev, err := kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			if v, got := readAllWays(t, r, id); v != value || got != rev {
				t.Errorf("%s: %q at %d, want %q at %d", id, v, got, value, rev)
			}
		}
	}
	if err := kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if v, rev := readAllWays(t, r, id); v != "" || rev != 0 {
			t.Errorf("%s removed: %q at %d", id, v, rev)
		}
	}
	if _, rev := readAllWays(t, r, "c"); rev == 0 {
		t.Error("c: gone with the others")
	}
}

// TestConfirm hands confirm a replica's answer that the leader has moved
// past, as a lagging replica would give: it returns the leader's last
// value, or none once the key is deleted, and the answer itself only while
// it is the last.
func TestConfirm(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	kv := bucket(t, nc, 1)
	r := newReader(t, nc, kv)
	ctx := context.Background()
	stream, key := r.bucketStream, r.bucketKeys+"c"
	put := func(value string) (*jetstream.RawStreamMsg, uint64) {
		t.Helper()
		rev, err := kv.Put(ctx, "c", []byte(value))
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := r.directGet(ctx, stream, msgGetRequest{LastFor: key})
		if err != nil || m.Sequence != rev {
			t.Fatalf("direct get after a put at %d: %v, %v", rev, m, err)
		}
		return m, rev
	}
	// Another key's writes after the answer are not the key's.
	old, _ := put(`{"version":1}`)
	if _, err := kv.Put(ctx, "other", []byte(`{"version":9}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.confirm(ctx, stream, key, old); err != nil || got != old {
		t.Fatalf("the last value: %v, %v", got, err)
	}
	_, rev2 := put(`{"version":2}`)
	_, rev3 := put(`{"version":3}`)
	got, err := r.confirm(ctx, stream, key, old)
	if err != nil || got.Sequence != rev3 || string(got.Data) != `{"version":3}` {
		t.Fatalf("two writes past the answer: %v, %v; want revision %d (not %d)", got, err, rev3, rev2)
	}
	last := got
	if err := kv.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.confirm(ctx, stream, key, last); err != nil || got.Header.Get(streams.KVOperationHeader) != "DEL" {
		t.Fatalf("after a delete: %v, %v", got, err)
	}
}

// TestReadStoredInACluster reads the snapshots of a bucket with three
// replicas, written through one server, through one that does not lead
// the bucket: the Reader reads them confirmed, and every read returns the
// last write before it, as the leader's reads do, however far the replica
// that answered the direct get lagged.
func TestReadStoredInACluster(t *testing.T) {
	servers := natstest.StartCluster(t, 3)
	writer := bucket(t, natstest.Connect(t, servers[0]), 3)
	nc := natstest.Connect(t, notLeader(t, writer, servers))
	r := newReader(t, nc, bucket(t, nc, 3))
	if r.Mode() != Confirmed {
		t.Fatalf("a bucket of three replicas is read %s", r.Mode())
	}
	ctx := context.Background()
	behind := 0
	const convs, rounds = 4, 50
	for round := range rounds {
		for i := range convs {
			id := fmt.Sprint("c", i)
			value := fmt.Sprintf(`{"version":%d,"sequence":%d}`, round+1, round+1)
			rev, err := writer.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			// How often a replica answers behind the leader, for the log.
			if m, _, err := r.directGet(ctx, r.bucketStream, msgGetRequest{LastFor: r.bucketKeys + id}); err != nil || m.Sequence < rev {
				behind++
			}
			got, gotRev, err := r.Snapshot(ctx, id, Confirmed)
			if err != nil || string(got) != value || gotRev != rev {
				t.Fatalf("%s: %q at %d (%v), want %q at %d", id, got, gotRev, err, value, rev)
			}
		}
	}
	t.Logf("direct gets answered behind the last write: %d of %d", behind, convs*rounds)
	if v, rev, err := r.Snapshot(ctx, "none", Confirmed); err != nil || v != nil || rev != 0 {
		t.Errorf("a key never written: %q at %d, %v", v, rev, err)
	}
}

// TestHeadReader checks when a replicated bucket's heads are read
// confirmed: once the snapshots read are large on average, and from the
// leader again once new and short ones have brought the mean down. A
// bucket of one replica, or one without direct gets, is read its one way.
func TestHeadReader(t *testing.T) {
	h := &heads{how: Confirmed, from: confirmedFrom}
	if got := h.pick(); got != Leader {
		t.Errorf("a worker that read nothing yet: %s", got)
	}
	h.add(2 << 20)
	if got := h.pick(); got != Confirmed {
		t.Errorf("after a snapshot of 2 MiB: %s", got)
	}
	for _, how := range []Mode{Direct, Leader} {
		other := &heads{how: how, from: confirmedFrom}
		other.add(2 << 20)
		if got := other.pick(); got != how {
			t.Errorf("%s read %s", how, got)
		}
	}
	reads := 0
	for ; h.pick() == Confirmed; reads++ {
		h.add(0)
	}
	if reads < 10 || reads > 40 {
		t.Errorf("%d conversations without a snapshot took the mean back under %d: want 10 to 40", reads, confirmedFrom)
	}
	for range 100 {
		h.add(confirmedFrom * 2)
	}
	if got := h.pick(); got != Confirmed {
		t.Errorf("snapshots of twice the threshold: %s", got)
	}
	if got := (&heads{how: Confirmed}).pick(); got != Confirmed {
		t.Errorf("from 0, nothing read yet: %s", got)
	}
	never := &heads{how: Confirmed, from: 1 << 40}
	never.add(64 << 20)
	if got := never.pick(); got != Leader {
		t.Errorf("confirmed from 1TiB, after 64 MiB: %s", got)
	}
}

// TestReadStoredPastAMirror reads snapshots from a bucket of one replica
// that a mirror with direct gets on answers for too: the direct gets go
// to either, and an answer from the mirror is not taken (the leader is
// asked), so every read, direct or confirmed, returns the bucket's own
// last value, even one the mirror does not have yet.
func TestReadStoredPastAMirror(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	kv := bucket(t, nc, 1)
	r := newReader(t, nc, kv)
	ctx := context.Background()
	const convs = 8
	for i := range convs {
		if _, err := kv.Put(ctx, fmt.Sprint("c", i), []byte(`{"version":1,"sequence":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SNAPSHOTS_MIRROR",
		Mirror: &jetstream.StreamSource{Name: r.bucketStream}, AllowDirect: true, MirrorDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, err := mirror.Info(ctx)
		if err == nil && info.State.Msgs == convs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror did not catch up: %v, %v", info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Which of the two answers a direct get is the server's choice: ask
	// until the mirror has answered, then check every answer.
	mirrored := 0
	for i := 0; i < 200 && mirrored == 0; i++ {
		if _, from, err := r.directGet(ctx, r.bucketStream, msgGetRequest{LastFor: r.bucketKeys + "c0"}); err != nil {
			t.Fatal(err)
		} else if from != r.bucketStream {
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
			rev, err := kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			for _, how := range []Mode{Direct, Confirmed} {
				got, gotRev, err := r.Snapshot(ctx, id, how)
				if err != nil || string(got) != value || gotRev != rev {
					t.Fatalf("%s (%s): %q at %d (%v), want %q at %d", id, how, got, gotRev, err, value, rev)
				}
			}
		}
	}
}

// TestHeadReaderStartsAtTheBucketMean checks that a head reader starts at
// the mean size of the values its bucket holds, and at 0 for an empty one.
func TestHeadReaderStartsAtTheBucketMean(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	kv := bucket(t, nc, 1)
	ctx := context.Background()
	var h heads
	h.start(ctx, kv)
	if h.how != Direct || h.mean.Load() != 0 {
		t.Fatalf("an empty bucket of one replica: read %s from a mean of %d", h.how, h.mean.Load())
	}
	const size = 40000
	for i := range 4 {
		if _, err := kv.Put(ctx, fmt.Sprint("c", i), make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	h.start(ctx, kv)
	// A stored value also holds its key and the stream's framing.
	if m := h.mean.Load(); m < size || m > size+256 {
		t.Errorf("values of %d bytes: a mean of %d", size, m)
	}
}
