package streams

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestReadStored reads snapshots of the bucket both ways a worker reads
// them, with a direct get (the embedded server's bucket has one replica)
// and from the leader, and requires the same answers: none for a key
// never written, the value and revision of the last write, none once
// deleted or purged.
func TestReadStored(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	if !w.bucketOneReplica {
		t.Fatal("the bucket of a single server is not taken as one replica")
	}
	ctx := context.Background()
	both := func(id string) (value string, rev uint64) {
		t.Helper()
		var got [2]string
		var revs [2]uint64
		for i, direct := range []bool{true, false} {
			v, r, err := w.readStored(ctx, id, direct)
			if err != nil {
				t.Fatalf("%s (direct %v): %v", id, direct, err)
			}
			got[i], revs[i] = string(v), r
		}
		if got[0] != got[1] || revs[0] != revs[1] {
			t.Fatalf("%s: direct get %.40q at %d, leader %.40q at %d", id, got[0], revs[0], got[1], revs[1])
		}
		return got[0], revs[0]
	}
	if v, rev := both("none"); v != "" || rev != 0 {
		t.Errorf("a key never written: %q at %d", v, rev)
	}
	for _, id := range []string{"a", "b", "c"} {
		for i := range 3 {
			value := fmt.Sprintf(`{"conversationId":%q,"version":%d,"sequence":%d}`, id, i, i)
			rev, err := w.kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			if v, r := both(id); v != value || r != rev {
				t.Errorf("%s: %q at %d, want %q at %d", id, v, r, value, rev)
			}
		}
	}
	if err := w.kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if v, rev := both(id); v != "" || rev != 0 {
			t.Errorf("%s removed: %q at %d", id, v, rev)
		}
	}
	if _, rev := both("c"); rev == 0 {
		t.Error("c: gone with the others")
	}
}

// TestSnapshotHeadOf reads the head of encoded snapshots and of objects
// with the fields in other orders, and refuses what is not an object.
func TestSnapshotHeadOf(t *testing.T) {
	big := strings.Repeat(`{"id":"m","role":"user","content":"x"},`, 1000)
	big = big[:len(big)-1]
	for _, tc := range []struct {
		value string
		want  snapshotHead
	}{
		{`{"conversationId":"c","version":7,"sequence":9,"flatList":[` + big + `],"contextTree":[]}`, snapshotHead{7, 9}},
		{`{"flatList":[` + big + `],"sequence":3,"contextTree":[],"version":2}`, snapshotHead{2, 3}},
		{` { "version" : 1 } `, snapshotHead{Version: 1}},
		{`{}`, snapshotHead{}},
	} {
		h, err := snapshotHeadOf([]byte(tc.value))
		if err != nil || h != tc.want {
			t.Errorf("%.60s: %+v, %v; want %+v", tc.value, h, err, tc.want)
		}
	}
	value, err := encodeSnapshotOf(nil, "c1", 12, 34, func(yield func([]byte) bool) { yield([]byte(`{"id":"m"}`)) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := snapshotHeadOf(value); err != nil || h != (snapshotHead{12, 34}) {
		t.Errorf("an encoded snapshot: %+v, %v", h, err)
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"version":"7"}`, `{"version":`, `{"flatList":[`} {
		if h, err := snapshotHeadOf([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, no error", bad, h)
		}
	}
}

// BenchmarkReadStored reads the head of a stored snapshot as a worker
// loading a conversation does, over the in-process connection of a worker
// with its embedded server: with a direct get, as from a bucket of one
// replica, and from the leader through the JetStream API, as from a
// replicated one.
func BenchmarkReadStored(b *testing.B) {
	ns := startServer(b, "")
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	w := provisionedWorker(b, nc, WithLogger(testLogger(b)))
	ctx := context.Background()
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
		if _, err := w.kv.Put(ctx, id, []byte(value)); err != nil {
			b.Fatal(err)
		}
		for _, direct := range []bool{true, false} {
			name := map[bool]string{true: "direct", false: "leader"}[direct]
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, name), func(b *testing.B) {
				b.SetBytes(int64(len(value)))
				for b.Loop() {
					h, rev, err := w.readHead(ctx, id, direct)
					if err != nil || rev == 0 || h.Version != 7 {
						b.Fatal(h, rev, err)
					}
				}
			})
		}
	}
	// None stored: the read of every new conversation.
	for _, direct := range []bool{true, false} {
		b.Run(fmt.Sprintf("none/%s", map[bool]string{true: "direct", false: "leader"}[direct]), func(b *testing.B) {
			for b.Loop() {
				if _, rev, err := w.readHead(ctx, "none", direct); err != nil || rev != 0 {
					b.Fatal(rev, err)
				}
			}
		})
	}
}

// TestReadStoredPastAMirror reads snapshots from a bucket of one replica
// that a mirror with direct gets on answers for too: the direct gets go
// to either, and an answer from the mirror is not taken (the leader is
// asked), so every read returns the bucket's own last value, even one the
// mirror does not have yet.
func TestReadStoredPastAMirror(t *testing.T) {
	nc := connect(t, startServer(t, ""))
	w := provisionedWorker(t, nc, WithLogger(testLogger(t)))
	ctx := context.Background()
	bucket := "KV_" + w.cfg.subjects.SnapshotBucket()
	const convs = 8
	for i := range convs {
		if _, err := w.kv.Put(ctx, fmt.Sprint("c", i), []byte(`{"version":1,"sequence":1}`)); err != nil {
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
			rev, err := w.kv.Put(ctx, id, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			got, gotRev, err := w.readStored(ctx, id, true)
			if err != nil || string(got) != value || gotRev != rev {
				t.Fatalf("%s: %q at %d (%v), want %q at %d", id, got, gotRev, err, value, rev)
			}
		}
	}
}
