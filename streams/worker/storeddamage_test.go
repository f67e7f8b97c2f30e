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
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
)

// TestLowerEventLimitKeepsStored: a worker restarted with a lower
// --max-event-bytes rebuilt a conversation without its stored 500 KB
// message, which had passed the limit when it was written, and said
// nothing. Now a rebuild applies every event still in the stream whatever
// its size; a new event over the lower limit is refused as before.
func TestLowerEventLimitKeepsStored(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	const id = "big"
	first := startWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0))
	c := newClient(t, nc)
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
	checkStoredAt(t, c, want, map[string]uint64{id: seq}, 30*time.Second)
	first.stop(t)

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
	startWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0), WithLimits(limits))
	seq = send(3, "next")
	checkStoredAt(t, c, want, map[string]uint64{id: seq}, 30*time.Second)
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
	ns := startServer(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := connect(t, ns)
	r := startWorker(t, nc, WithSnapshotInterval(0))
	c := newClient(t, nc)
	want := map[string]*conversation.Conversation{}
	last := map[string]uint64{}
	send := func(id string, k int) {
		t.Helper()
		data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": "hi"}
		if k > 0 {
			data["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		sent, err := c.Send(context.Background(), id, streams.TypeMessageAppended, data)
		if err != nil {
			t.Fatal(err)
		}
		if want[id] == nil {
			want[id] = conversation.NewConversation()
		}
		m, err := conversation.NewMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := want[id].Append(m); err != nil {
			t.Fatal(err)
		}
		last[id] = sent.Sequence
	}
	for k := range 5 {
		for i := range 4 {
			send(fmt.Sprintf("c%d", i), k)
		}
	}
	checkStoredAt(t, c, want, last, 30*time.Second)
	r.stop(t)
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	if n := damageFiles(t, dir, filepath.Join("obs", r.w.cfg.consumer, "o.dat"), 64); n == 0 {
		t.Fatal("no consumer state file found")
	}
	ns = startServerAt(t, dir, port)
	nc = connect(t, ns)
	w, err := New(nc, WithLogger(testLogger(t)), WithSnapshotInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, 30*time.Second, "not ready for the damaged consumer", func() bool {
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
	waitFor(t, 60*time.Second, "the worker ready", func() bool { return w.Ready() == nil })
	c = newClient(t, nc)
	for i := range 4 {
		send(fmt.Sprintf("c%d", i), 5)
	}
	checkStoredAt(t, c, want, last, 30*time.Second)
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
	ns := startServer(t, "")
	nc := connect(t, ns)
	const id = "lost"
	first := startWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0))
	c := newClient(t, nc)
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
	waitVersion(t, c, id, seqs[4], 30*time.Second)
	first.stop(t)
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
	r := startWorker(t, nc, WithCheckpoints(false), WithSnapshotInterval(0),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	waitVersion(t, c, id, send(5), 30*time.Second)
	if n := sumWhere(collect(t, reader), MetricStorageDamaged, "what", "events"); n < 1 {
		t.Errorf("%s{what=events} = %d, want at least 1", MetricStorageDamaged, n)
	}
	rec := httptest.NewRecorder()
	r.w.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if body := rec.Body.String(); !strings.Contains(body, "storage damaged") || !strings.Contains(body, id) {
		t.Errorf("/readyz says %q, want the lost events named", body)
	}
	t.Logf("/readyz: %s", rec.Body.String())
}
