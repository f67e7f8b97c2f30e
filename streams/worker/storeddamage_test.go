package worker

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
)

// TestLowerEventLimitKeepsStored: a worker restarted with a lower
// --max-event-bytes rebuilt a conversation without its stored 500 KB
// message, which had passed the limit when it was written, and said
// nothing. Now a rebuild applies every event still in the stream whatever
// its size; a new event over the lower limit is refused as before.
func TestLowerEventLimitKeepsStored(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	const id = "big"
	first := StartWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	want := map[string]*conversation.Conversation{id: conversation.NewConversation()}
	send := func(k int, content string) uint64 {
		t.Helper()
		data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": content}
		if k > 0 {
			data["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		sent, err := c.Send(context.Background(), id, streams.TypeMessageAppended, data)
		if err != nil {
			t.Fatal(err)
		}
		m, err := conversation.NewMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := want[id].Append(m); err != nil {
			t.Fatal(err)
		}
		return sent.Sequence
	}
	send(0, "hello")
	send(1, strings.Repeat("x", 500<<10))
	seq := send(2, "after")
	natstest.CheckStoredAt(t, c, want, map[string]uint64{id: seq}, 30*time.Second)
	first.Stop(t)

	// A worker with a lower limit, and no stored snapshot to start from:
	// the conversation is rebuilt from every event.
	ctx := context.Background()
	kv, err := c.JetStream().KeyValue(ctx, c.Subjects().SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, id); err != nil {
		t.Fatal(err)
	}
	limits := DefaultLimits()
	limits.MaxEventBytes = 100 << 10
	StartWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0), WithLimits(limits))
	seq = send(3, "next")
	natstest.CheckStoredAt(t, c, want, map[string]uint64{id: seq}, 30*time.Second)
}

// damageFiles overwrites n bytes in the middle of every file under dir
// whose path contains part, with 0xff.
func damageFiles(t testing.TB, dir, part string, n int) int {
	t.Helper()
	damaged := 0
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.Contains(path, part) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			return err
		}
		at := len(b) / 2
		for i := at; i < min(at+n, len(b)); i++ {
			b[i] ^= 0xff
		}
		damaged++
		return os.WriteFile(path, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return damaged
}

// TestDamagedConsumerState: a consumer state file damaged while the server
// was down stopped the worker at every start, a crash loop. The server
// cannot load nor make again a consumer over damaged files, so the worker
// now stays up, not ready with the cause, and once an operator removed
// the files it goes on by itself: every conversation is Parse of its
// events.
func TestDamagedConsumerState(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	sent := newAppends(t, c)
	for k := range 5 {
		for i := range 4 {
			sent.chain(fmt.Sprintf("c%d", i), k)
		}
	}
	natstest.CheckStoredAt(t, c, sent.want, sent.last, 30*time.Second)
	r.Stop(t)
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	if n := damageFiles(t, dir, filepath.Join("obs", r.W.cfg.consumer, "o.dat"), 64); n == 0 {
		t.Fatal("no consumer state file found")
	}
	ns = startServerAt(t, dir, port)
	nc = natstest.Connect(t, ns)
	w, err := New(nc, WithLogger(natstest.TestLogger(t)), WithSnapshotInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	natstest.WaitFor(t, 30*time.Second, "not ready for the damaged consumer", func() bool {
		err := w.Ready()
		return err != nil && strings.Contains(err.Error(), "damaged")
	})
	t.Logf("ready: %v", w.Ready())
	select {
	case err := <-done:
		t.Fatalf("the worker stopped: %v", err)
	case <-time.After(time.Second):
	}
	// The operator removes the damaged consumer's files.
	ns.Shutdown()
	ns.WaitForShutdown()
	removed := 0
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && filepath.Base(path) == w.cfg.consumer && filepath.Base(filepath.Dir(path)) == "obs" {
			removed++
			return os.RemoveAll(path)
		}
		return err
	})
	if removed == 0 {
		t.Fatal("no consumer directory removed")
	}
	startServerAt(t, dir, port)
	natstest.WaitFor(t, 60*time.Second, "the worker ready", func() bool { return w.Ready() == nil })
	c = natstest.NewClient(t, nc)
	sent.c = c
	for i := range 4 {
		sent.chain(fmt.Sprintf("c%d", i), 5)
	}
	natstest.CheckStoredAt(t, c, sent.want, sent.last, 30*time.Second)
}

// startServerAt starts an embedded JetStream server on port with its
// store in dir, as a restart of one that ran there.
func startServerAt(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	ns, err := natsembed.Start(natsembed.Config{Listen: fmt.Sprintf("127.0.0.1:%d", port), StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// TestEventsLostReported: events a stored snapshot covers gone from the
// events stream (its files lost, or removed) were never reported: the
// conversation was rebuilt without them and served. Now the rebuild says
// so: convstream.storage.damaged with what events, and a line on /readyz.
func TestEventsLostReported(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	const id = "lost"
	first := StartWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	var seqs []uint64
	send := func(k int) uint64 {
		t.Helper()
		data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": "hi"}
		if k > 0 {
			data["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		sent, err := c.Send(context.Background(), id, streams.TypeMessageAppended, data)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, sent.Sequence)
		return sent.Sequence
	}
	for k := range 5 {
		send(k)
	}
	natstest.WaitVersion(t, c, id, seqs[4], 30*time.Second)
	first.Stop(t)
	ctx := context.Background()
	st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs[3:] {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	natstest.WaitVersion(t, c, id, send(5), 30*time.Second)
	if n := sumWhere(natstest.Collect(t, reader), MetricStorageDamaged, "what", "events"); n < 1 {
		t.Errorf("%s{what=events} = %d, want at least 1", MetricStorageDamaged, n)
	}
	rec := httptest.NewRecorder()
	r.W.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if body := rec.Body.String(); !strings.Contains(body, "storage damaged") || !strings.Contains(body, id) {
		t.Errorf("/readyz says %q, want the lost events named", body)
	}
	t.Logf("/readyz: %s", rec.Body.String())
}

// TestStaleSnapshotsRebuilt: a snapshot bucket truncated, or restored
// from an older copy, served stale snapshots with /readyz 200 and nothing
// said. The worker now compares the stored snapshots with the events
// stream once it consumes: one snapshot put back to an older version and
// one removed are counted (convstream.storage.damaged{what=snapshots}) and
// rebuilt from the events stream with no new event, each equal to Parse;
// nothing is left on /readyz, and a later event applies over the rebuilt
// snapshot.
func TestStaleSnapshotsRebuilt(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	first := StartWorker(t, nc, WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	want := map[string]*conversation.Conversation{}
	var old []byte
	for _, id := range []string{"fresh", "stale", "gone"} {
		want[id] = conversation.NewConversation()
		for k := range 3 {
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": "hi", "createdAt": 1000 + k}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := want[id].Append(m); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Send(ctx, id, streams.TypeMessageAppended, data); err != nil {
				t.Fatal(err)
			}
			natstest.WaitCaughtUp(t, c, id, 30*time.Second)
			if id == "stale" && k == 0 {
				entry, err := first.W.snapshots.kv.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				old = entry.Value()
			}
		}
	}
	first.Stop(t)
	if _, err := first.W.snapshots.kv.Put(ctx, "stale", old); err != nil {
		t.Fatal(err)
	}
	if err := first.W.snapshots.kv.Purge(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	r := StartWorker(t, nc, WithSnapshotInterval(0), WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	natstest.WaitFor(t, 60*time.Second, "the audit", r.W.audit.done.Load)
	if n := sumWhere(natstest.Collect(t, reader), MetricStorageDamaged, "what", "snapshots"); n != 2 {
		t.Errorf("%s{what=snapshots} = %d, want 2 (stale and gone)", MetricStorageDamaged, n)
	}
	if n := r.W.audit.repaired.Load(); n != 2 {
		t.Errorf("%d snapshots rebuilt, want 2 (stale and gone)", n)
	}
	natstest.CheckStored(t, c, want, 30*time.Second)
	rec := httptest.NewRecorder()
	r.W.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if body := rec.Body.String(); rec.Code != 200 || strings.Contains(body, "storage damaged") {
		t.Errorf("/readyz %d says %q, want the rebuilt snapshots not reported", rec.Code, body)
	}
	data := map[string]any{"id": "m3", "role": "user", "content": "again", "parentId": "m2", "createdAt": 1003}
	m, err := conversation.NewMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := want["stale"].Append(m); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "stale", streams.TypeMessageAppended, data); err != nil {
		t.Fatal(err)
	}
	natstest.CheckStored(t, c, map[string]*conversation.Conversation{"stale": want["stale"], "fresh": want["fresh"]}, 30*time.Second)
}

// TestSnapshotBucketRemovedRebuilt: the operator's fix for a snapshot
// bucket whose files are damaged (docs/operations.md, Failure modes):
// with the server stopped, its stream's directory is removed. The worker
// makes the bucket again at its start and rebuilds every conversation's
// snapshot from the events stream, with no new event: each equals Parse.
func TestSnapshotBucketRemovedRebuilt(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	sent := newAppends(t, c)
	for k := range 5 {
		for i := range 20 {
			sent.chain(fmt.Sprintf("c%d", i), k)
		}
	}
	natstest.CheckStored(t, c, sent.want, 30*time.Second)
	bucket := "KV_" + r.W.cfg.subjects.SnapshotBucket()
	r.Stop(t)
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	removed := 0
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && filepath.Base(path) == bucket {
			removed++
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			return filepath.SkipDir
		}
		return err
	})
	if removed != 1 {
		t.Fatalf("%d directories of %s removed, want 1", removed, bucket)
	}
	ns = startServerAt(t, dir, port)
	nc = natstest.Connect(t, ns)
	r = StartWorker(t, nc, WithSnapshotInterval(0))
	natstest.WaitFor(t, 60*time.Second, "the audit", r.W.audit.done.Load)
	if n := r.W.audit.repaired.Load(); n != int64(len(sent.want)) {
		t.Errorf("%d snapshots rebuilt, want %d", n, len(sent.want))
	}
	natstest.CheckStored(t, natstest.NewClient(t, nc), sent.want, 30*time.Second)
}
