package worker_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// startLimitedServer starts an embedded JetStream server whose file store
// may take maxStore bytes, with its store in dir, on port (-1: a free
// one).
func startLimitedServer(t testing.TB, dir string, port int, maxStore int64) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		JetStreamMaxStore: maxStore, JetStreamMaxMemory: 64 << 20, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return ns
}

// TestFullStoreKeepsWorkerUp: a server whose store is full refuses the
// worker's snapshot writes with "insufficient resources". The worker
// stays up and says not ready with the cause, keeps the events it could
// not store in the stream (none is dead-lettered), and once the server
// has room again serves every conversation as Parse of its events.
func TestFullStoreKeepsWorkerUp(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a server's store")
	}
	dir := t.TempDir()
	const small = 24 << 20
	ns := startLimitedServer(t, dir, -1, small)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns)
	r := worker.StartWorker(t, nc, worker.WithSnapshotInterval(0))
	c := natstest.NewClient(t, nc)
	const convs = 40
	want := map[string]*conversation.Conversation{}
	last := map[string]uint64{}
	content := strings.Repeat("x", 8<<10)
	full := false
	for k := 0; !full && k < 10_000; k++ {
		for i := range convs {
			id := fmt.Sprintf("full%d", i)
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": content}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			sent, err := c.Send(context.Background(), id, streams.TypeMessageAppended, data)
			if err != nil {
				t.Logf("send %d of %s refused: %v", k, id, err)
				full = true
				break
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
	}
	if !full {
		t.Fatal("the store never filled")
	}
	natstest.WaitFor(t, 60*time.Second, "the worker not ready", func() bool { return r.W.Ready() != nil })
	if err := r.W.Ready(); !strings.Contains(err.Error(), "store is full") {
		t.Errorf("not ready for %q, want the full store named", err)
	}
	select {
	case <-r.Done():
		t.Fatalf("the worker stopped: %v", r.Err())
	case <-time.After(2 * time.Second):
	}
	// Room again: the server restarted with a larger store.
	ns.Shutdown()
	ns.WaitForShutdown()
	startLimitedServer(t, dir, port, 256<<20)
	natstest.WaitFor(t, 60*time.Second, "the worker ready", func() bool { return r.W.Ready() == nil })
	select {
	case <-r.Done():
		t.Fatalf("the worker stopped: %v", r.Err())
	default:
	}
	natstest.CheckStoredAt(t, c, want, last, 60*time.Second)
}
