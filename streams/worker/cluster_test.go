package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// clusterEvent is one event of the cluster scenario.
type clusterEvent struct {
	id, conv, typ string
	data          map[string]any
}

// clusterPlan builds, for n conversations, rounds of events (4 appends
// making a chain, then an update of the first message): round r holds
// event r of every conversation. It returns the conversations they make.
func clusterPlan(t testing.TB, n int) ([][]clusterEvent, map[string]*conversation.Conversation) {
	t.Helper()
	const appends = 4
	rounds := make([][]clusterEvent, appends+1)
	want := map[string]*conversation.Conversation{}
	for k := range n {
		conv := fmt.Sprintf("cl-%04d", k)
		live := conversation.NewConversation()
		parent := any(nil)
		for j := range appends {
			role := []string{"user", "assistant"}[j%2]
			data := map[string]any{"id": fmt.Sprintf("m%d", j), "role": role,
				"content": fmt.Sprintf("%s %d of %s", role, j, conv), "parentId": parent, "createdAt": 1000 + j}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
			rounds[j] = append(rounds[j], clusterEvent{fmt.Sprintf("%s-e%d", conv, j), conv, streams.TypeMessageAppended, data})
			parent = data["id"]
		}
		patch := map[string]any{"id": "m0", "content": "edited while the cluster lost a node"}
		if err := live.Update("m0", patch); err != nil {
			t.Fatal(err)
		}
		rounds[appends] = append(rounds[appends], clusterEvent{conv + "-e-upd", conv, streams.TypeMessageUpdated, patch})
		want[conv] = live
	}
	return rounds, want
}

// appliedSpan is what a worker's trace says about one applied event.
type appliedSpan struct {
	worker        int
	eventID, conv string
	seq, version  int64
}

// appliedSpans returns the "process" spans of a natstest.Recorder whose outcome is
// applied.
func appliedSpans(worker int, rec *tracetest.SpanRecorder) []appliedSpan {
	return processSpans(worker, rec, "applied")
}

// processSpans returns the "process" spans of a natstest.Recorder with an outcome.
func processSpans(worker int, rec *tracetest.SpanRecorder, want string) []appliedSpan {
	var out []appliedSpan
	for _, s := range rec.Ended() {
		a := appliedSpan{worker: worker}
		outcome := ""
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "messaging.message.id":
				a.eventID = kv.Value.AsString()
			case "convstream.conversation_id":
				a.conv = kv.Value.AsString()
			case "messaging.nats.stream_sequence":
				a.seq = kv.Value.AsInt64()
			case "convstream.snapshot_version":
				a.version = kv.Value.AsInt64()
			case "convstream.outcome":
				outcome = kv.Value.AsString()
			}
		}
		if strings.HasPrefix(s.Name(), "process ") && outcome == want {
			out = append(out, a)
		}
	}
	return out
}

// TestClusterFailover runs 3 workers on a 3-node JetStream cluster (R3
// stream and buckets, 6 partitions), kills one worker mid-stream (its
// connection closed, nothing drained) and stops one NATS node, and
// requires every conversation to converge to the Parse of its messages,
// each event applied at most once (an event the killed worker applied but
// never stored is taken into account by its successor's rebuild, or
// applied again at the same version), versions in stream order, and every
// worker to have applied events. Without -short: 1,000 conversations.
func TestClusterFailover(t *testing.T) {
	convs := 1000
	if testing.Short() {
		convs = 150
	}
	start := time.Now()
	servers := natstest.StartCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3, Partitions: 6}

	logger := natstest.FailureLogger(t, 400)
	recs := make([]*tracetest.SpanRecorder, 3)
	var lost [3]atomic.Int64 // partitions each worker lost to a takeover
	conns := make([]*nats.Conn, 3)
	workers := make([]*Running, 3)
	for i := range 3 {
		// Workers connect to nodes 0 and 1: node 2, stopped later, holds
		// some of the streams' and consumers' leaders but no worker's
		// connection (a worker whose server vanishes mid-store is, for its
		// unacknowledged events, a worker that died: see the check below).
		nc, err := nats.Connect(natstest.ClusterURLs(servers, i%2), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
			nats.DontRandomize())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		conns[i] = nc
		recs[i] = tracetest.NewSpanRecorder()
		workers[i] = StartWorker(t, nc, WithLogger(slog.New(lossCounter{logger.With("worker", i).Handler(), &lost[i]})), WithStorage(storage), WithPinnedTTL(5*time.Second), WithAckWait(3*time.Second),
			WithLanes(4), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recs[i]))))
	}
	pub, err := nats.Connect(natstest.ClusterURLs(servers, 0), nats.MaxReconnects(-1), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	c := natstest.NewClient(t, pub)

	rounds, want := clusterPlan(t, convs)
	var mu sync.Mutex
	lastSeq := map[string]uint64{}
	total := 0
	sendErr := func(round []clusterEvent) error {
		const senders = 8
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		for g := range senders {
			wg.Go(func() {
				for i := g; i < len(round); i += senders {
					e := round[i]
					deadline := time.Now().Add(30 * time.Second)
					for {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						sent, err := c.Send(ctx, e.conv, e.typ, e.data, client.WithEventID(e.id))
						cancel()
						if err == nil {
							mu.Lock()
							lastSeq[e.conv] = max(lastSeq[e.conv], sent.Sequence)
							mu.Unlock()
							break
						}
						if time.Now().After(deadline) {
							errs <- fmt.Errorf("send %s: %w", e.id, err)
							return
						}
						time.Sleep(50 * time.Millisecond) // a node is gone: the same id is stored once
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		mu.Lock()
		total += len(round)
		mu.Unlock()
		return <-errs // nil once closed and empty
	}
	send := func(round []clusterEvent) {
		t.Helper()
		if err := sendErr(round); err != nil {
			t.Fatal(err)
		}
	}

	send(rounds[0])
	// The partitions spread over the workers: a worker that pulled first
	// takes them all with the first events, then hands off what is over its
	// share; the others learn that they own a partition from the events it
	// delivers them next. (A partition handed off during round 1 may only
	// show as owned with round 2.)
	share := storage.Partitions / len(workers)
	natstest.WaitFor(t, 30*time.Second, "partitions handed off", func() bool {
		for _, r := range workers {
			if len(r.W.OwnedPartitions()) > share {
				return false
			}
		}
		return true
	})
	spread := func() bool {
		for _, r := range workers {
			if n := len(r.W.OwnedPartitions()); n < 1 || n > share {
				return false
			}
		}
		return true
	}
	// Round 1 in slices 0.6 s apart until the partitions are spread, so
	// that partitions handed off once more meanwhile have events to show
	// their new owner: a worker learns it owns a partition from its
	// events, and a busy worker's hand-off waits for its lanes.
	for i, n := 0, len(rounds[1]); i < n; i += n / 10 {
		send(rounds[1][i:min(n, i+n/10)])
		if !spread() {
			time.Sleep(600 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); !spread(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			for i, r := range workers {
				t.Logf("worker %d owns %v", i, r.W.OwnedPartitions())
			}
			logPartitionConsumers(t, workers[1].W)
			t.Fatal("timed out waiting for partitions spread over the workers")
		}
	}
	spreadAt := time.Now()
	// Worker 0 dies while round 2 is being sent: its connection is cut,
	// nothing is drained or acked.
	sent2 := make(chan error, 1)
	go func() { sent2 <- sendErr(rounds[2]) }()
	time.Sleep(30 * time.Millisecond)
	conns[0].Close()
	select {
	case <-workers[0].Done():
	case <-time.After(30 * time.Second):
		t.Fatal("worker 0 did not stop after losing its connection")
	}
	killedAt := time.Now()
	if err := <-sent2; err != nil {
		t.Fatal(err)
	}
	// A NATS node stops; the streams keep a quorum of 2.
	servers[2].Shutdown()
	servers[2].WaitForShutdown()
	send(rounds[3])
	send(rounds[4])
	sentAt := time.Now()

	pending := map[string]bool{}
	for conv := range want {
		pending[conv] = true
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(pending) > 0 {
		for conv := range pending {
			s, err := c.Snapshot(context.Background(), conv)
			if err != nil || s.Sequence < lastSeq[conv] {
				continue
			}
			res, err := want[conv].Result()
			if err != nil {
				t.Fatal(err)
			}
			if d := natstest.SnapshotDiff(t, s, res); d != "" {
				t.Fatalf("%s: %s", conv, d)
			}
			delete(pending, conv)
		}
		if len(pending) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d conversations did not converge", len(pending))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	converged := time.Since(sentAt)

	perEvent := map[string]int{}
	appliedBy := map[string][]int{}
	perWorker := make([]int, 3)
	byConv := map[string][]appliedSpan{}
	for i, rec := range recs {
		for _, a := range appliedSpans(i, rec) {
			perEvent[a.eventID]++
			appliedBy[a.eventID] = append(appliedBy[a.eventID], i)
			perWorker[i]++
			byConv[a.conv] = append(byConv[a.conv], a)
		}
	}
	// An event applied twice is allowed only when worker 0 (killed, its
	// events neither stored nor acknowledged) applied it first: its
	// successor applies it again, at the same version (versions are event
	// sequences), which names the same flat list. A worker starved past
	// the pinned TTL (a loaded machine, the race detector) is taken over
	// the same way: allowed too when it logged a partition lost.
	reapplied := 0
	for id, n := range perEvent {
		by := appliedBy[id]
		switch {
		case n == 1:
		case n == 2 && by[0] != by[1] && (by[0] == 0 || lost[by[0]].Load() > 0):
			reapplied++
		default:
			t.Errorf("event %s applied %d times, by workers %v", id, n, by)
		}
	}
	for i, n := range perWorker {
		if n == 0 {
			t.Errorf("worker %d applied nothing: %v", i, perWorker)
		}
	}
	for conv, as := range byConv {
		sort.Slice(as, func(i, j int) bool {
			if as[i].version != as[j].version {
				return as[i].version < as[j].version
			}
			return as[i].worker < as[j].worker
		})
		for i := 1; i < len(as); i++ {
			a, b := as[i-1], as[i]
			if a.version == b.version && a.seq == b.seq && a.worker != b.worker && (a.worker == 0 || lost[a.worker].Load() > 0) {
				continue // reapplied after the kill or a takeover, see above
			}
			if a.version == b.version || b.seq <= a.seq || b.version != b.seq {
				t.Errorf("%s: version %d (seq %d, worker %d) after version %d (seq %d, worker %d)", conv,
					b.version, b.seq, b.worker, a.version, a.seq, a.worker)
			}
		}
	}
	t.Logf("%d conversations, %d events; applied by worker: %v (%d events in all, %d of them applied by the killed "+
		"(or a taken over) worker and again by its successor; the rest were folded into a rebuild, their redelivery skipped); "+
		"partitions lost to takeovers by workers 1 and 2: %d, %d; "+
		"partitions spread %v after start; worker killed %v after start; converged %v after the last send; total %v",
		convs, total, perWorker, len(perEvent), reapplied, lost[1].Load(), lost[2].Load(), spreadAt.Sub(start).Round(time.Millisecond), killedAt.Sub(start).Round(time.Millisecond),
		converged.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// lossCounter counts the "partition lost" records of a worker's log: the
// server gave a partition of the worker's to another, as it does when the
// worker stops pulling for the pinned TTL.
type lossCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (h lossCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "partition lost" {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h lossCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return lossCounter{h.Handler.WithAttrs(as), h.n}
}

func (h lossCounter) WithGroup(name string) slog.Handler {
	return lossCounter{h.Handler.WithGroup(name), h.n}
}

// logPartitionConsumers logs what the server says of each partition's
// consumer: its pinned client, waiting pulls and pending events.
func logPartitionConsumers(t testing.TB, w *Worker) {
	t.Helper()
	for p, c := range w.own.cons {
		info, err := c.Info(context.Background())
		if err != nil {
			t.Logf("partition %d: %v", p, err)
			continue
		}
		pinned := ""
		for _, g := range info.PriorityGroups {
			pinned = fmt.Sprintf("%s pinned %q since %v", g.Group, g.PinnedClientID, g.PinnedTS)
		}
		t.Logf("partition %d: leader %s, %s; waiting %d, pending %d, ack pending %d, redelivered %d, delivered %d",
			p, info.Cluster.Leader, pinned, info.NumWaiting, info.NumPending, info.NumAckPending, info.NumRedelivered,
			info.Delivered.Stream)
	}
}
