package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

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
	nc := natstest.Connect(t, servers[0])
	c := natstest.NewClient(t, nc)
	first := StartWorker(t, nc, WithStorage(storage), WithLogger(natstest.TestLogger(t)))
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
		natstest.CheckStoredAt(t, c, want, last, 30*time.Second)
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
	first.Stop(t)

	// The confirmations, seen as requests to the bucket's leader, by the
	// key they confirm. A conversation may be confirmed more than once: a
	// snapshot write that times out under load and is tried again meets
	// its own first write, and the head is read again (storedBehind).
	var mu sync.Mutex
	confirmed := map[string]int{}
	sub, err := nc.Subscribe("$JS.API.STREAM.MSG.GET.KV_"+first.W.cfg.subjects.SnapshotBucket(), func(m *nats.Msg) {
		var req struct {
			NextFor string `json:"next_by_subj"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.NextFor != "" {
			mu.Lock()
			confirmed[req.NextFor]++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	second := StartWorker(t, natstest.Connect(t, first.W.notBucketLeader(t, servers)), WithStorage(storage), WithLogger(natstest.TestLogger(t)))
	// The snapshot audit reads each stored head once as the worker starts
	// (store_audit.go); the loads counted are the ones the events cause.
	natstest.WaitFor(t, 60*time.Second, "the second worker's snapshot audit", second.W.audit.done.Load)
	mu.Lock()
	clear(confirmed)
	mu.Unlock()
	send(msgs)
	check()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	reads := 0
	for _, n := range confirmed {
		reads += n
	}
	t.Logf("conversations confirmed: %d of %d, in %d confirmations (mean %d bytes)", len(confirmed), convs, reads, second.W.reads.MeanSize())
	if second.W.reads.Mode() != read.Confirmed || second.W.reads.Pick() != read.Confirmed || len(confirmed) != convs {
		t.Errorf("the second worker reads heads %s (picks %s); %d of %d conversations' loads confirmed, want all",
			second.W.reads.Mode(), second.W.reads.Pick(), len(confirmed), convs)
	}
}

// BenchmarkReadStored reads the head of a stored snapshot as a worker
// loading a conversation does, every way it reads one: over the
// in-process connection of a worker with its embedded server (one
// replica), and in a cluster of three servers on loopback, from a bucket
// of three replicas through a server that is not its leader.
func BenchmarkReadStored(b *testing.B) {
	ns := natstest.StartServer(b, "")
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	b.Run("one", func(b *testing.B) {
		benchmarkReadStored(b, provisionedWorker(b, nc, WithLogger(natstest.TestLogger(b))))
	})
	b.Run("cluster", func(b *testing.B) {
		servers := natstest.StartCluster(b, 3)
		storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
		w := provisionedWorker(b, natstest.Connect(b, servers[0]), WithStorage(storage), WithLogger(natstest.TestLogger(b)))
		benchmarkReadStored(b, provisionedWorker(b, natstest.Connect(b, w.notBucketLeader(b, servers)), WithStorage(storage), WithLogger(natstest.TestLogger(b))))
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
	ways := []read.Mode{read.Confirmed, read.Leader}
	if w.reads.Mode() == read.Direct {
		ways = append(ways, read.Direct)
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

// TestHeadsConfirmedFrom checks that WithHeadsConfirmedFrom reaches the
// worker's reader and refuses a negative size.
func TestHeadsConfirmedFrom(t *testing.T) {
	cfg, err := configOf([]Option{WithHeadsConfirmedFrom(1 << 40)})
	if err != nil {
		t.Fatal(err)
	}
	if got := readConfig(nil, cfg, nil, nil).ConfirmedFrom; got != 1<<40 {
		t.Errorf("WithHeadsConfirmedFrom(1TiB): the reader reads confirmed from %d", got)
	}
	if got := readConfig(nil, defaultConfig(), nil, nil).ConfirmedFrom; got != DefaultHeadsConfirmedFrom {
		t.Errorf("by default, the reader reads confirmed from %d, want %d", got, DefaultHeadsConfirmedFrom)
	}
	if err := CheckOptions(WithHeadsConfirmedFrom(-1)); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("a negative size: %v", err)
	}
}
