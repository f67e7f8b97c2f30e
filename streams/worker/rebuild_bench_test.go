package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkRebuild times the rebuild of one conversation of n stored
// events from the events stream, as a worker does after an eviction, a
// restart or a hand-off: over the in-process connection a worker with its
// embedded server uses, and over TCP (loopback: a cluster's round trips
// cost more). The events of spread conversations are interleaved, as live
// traffic stores them: the server scans from one event of a conversation
// to its next, so with 1,000 the reads cost the server more than the trips.
func BenchmarkRebuild(b *testing.B) {
	for _, conn := range []string{"inprocess", "tcp"} {
		for _, n := range []int{1, 8, 32, 128, 1024} {
			b.Run(fmt.Sprintf("conn=%s/spread=4/events=%d", conn, n), func(b *testing.B) { benchmarkRebuild(b, conn, n, 4, 0, rebuildFromEvents) })
		}
	}
	b.Run("conn=inprocess/spread=1000/events=32", func(b *testing.B) { benchmarkRebuild(b, "inprocess", 32, 1000, 0, rebuildFromEvents) })
	// From a checkpoint of every event: one get, one read from the leader.
	for _, n := range []int{32, 1024} {
		b.Run(fmt.Sprintf("conn=inprocess/spread=4/events=%d/checkpoint", n), func(b *testing.B) {
			benchmarkRebuild(b, "inprocess", n, 4, 0, rebuildFromCheckpoint)
		})
	}
	b.Run("conn=inprocess/spread=1000/events=32/checkpoint", func(b *testing.B) { benchmarkRebuild(b, "inprocess", 32, 1000, 0, rebuildFromCheckpoint) })
	// A conversation with a stored snapshot and no checkpoint: the get
	// that finds none, then the replay.
	b.Run("conn=inprocess/spread=4/events=8/nocheckpoint", func(b *testing.B) { benchmarkRebuild(b, "inprocess", 8, 4, 0, rebuildCheckpointMissing) })
	// Behind: as many events again are stored after the one being applied.
	for _, spread := range []int{4, 1000} {
		b.Run(fmt.Sprintf("conn=inprocess/spread=%d/events=32/behind=32", spread), func(b *testing.B) {
			benchmarkRebuild(b, "inprocess", 32, spread, 32, rebuildFromEvents)
		})
	}
}

// How a case of BenchmarkRebuild starts: from the first event (no snapshot
// stored), from a checkpoint of every event, or looking for a checkpoint
// and finding none.
const (
	rebuildFromEvents = iota
	rebuildFromCheckpoint
	rebuildCheckpointMissing
)

// benchmarkRebuild is one case of BenchmarkRebuild: n events of each of
// spread conversations, then behind more, rebuilt up to the first of those,
// starting as from says.
func benchmarkRebuild(b *testing.B, conn string, n, spread, behind, from int) {
	ns := natstest.StartServer(b, "")
	opts := []nats.Option{nats.InProcessServer(ns)}
	if conn == "tcp" {
		opts = nil
	}
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	r := StartWorker(b, nc, WithLogger(natstest.FailureLogger(b, 10)))
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	content := strings.Repeat("x", 256)
	var before uint64
	for i := range n + behind {
		for k := range spread {
			conv := fmt.Sprintf("rb%d", k)
			msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": content, "createdAt": i}
			if i > 0 {
				msg["parentId"] = fmt.Sprintf("m%d", i-1)
			}
			ev, err := streams.NewEvent(fmt.Sprintf("%s-%d", conv, i), streams.TypeMessageAppended, "urn:bench", conv, msg)
			if err != nil {
				b.Fatal(err)
			}
			m, err := streams.EncodeEvent("convstream.events."+conv, ev, streams.Structured)
			if err != nil {
				b.Fatal(err)
			}
			if i == n && k == 0 {
				// The first event after the n: as if a worker applied it.
				ack, err := js.PublishMsg(context.Background(), m)
				if err != nil {
					b.Fatal(err)
				}
				before = ack.Sequence
				continue
			}
			if _, err := js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()
	ctx := context.Background()
	if behind == 0 {
		stream, err := js.Stream(ctx, r.W.cfg.subjects.EventsStream())
		if err != nil {
			b.Fatal(err)
		}
		info, err := stream.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		before = info.State.LastSeq + 1
	}
	// The worker applies the events too: let it finish, so that the
	// rebuilds timed do not share the machine with it.
	settled(b, r.W)
	checkpoint := from == rebuildFromCheckpoint
	if checkpoint {
		rp, err := r.W.rebuild(ctx, "rb0", before, false)
		if err != nil {
			b.Fatal(err)
		}
		value, err := conversationCheckpoint(rp.conv, rp.seen, rp.last, uint64(rp.n)).encode(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.W.cp.bucket.Put(ctx, "rb0", value); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		rp, err := r.W.rebuild(ctx, "rb0", before, from != rebuildFromEvents)
		if err != nil {
			b.Fatal(err)
		}
		if rp.checkpoint != checkpoint {
			b.Fatalf("rebuilt from a checkpoint: %v, want %v", rp.checkpoint, checkpoint)
		}
		if got := rp.conv.Len(); got != n {
			b.Fatalf("rebuilt %d messages, want %d", got, n)
		}
	}
}

// settled waits until w has applied and stored every event in its stream.
func settled(b *testing.B, w *Worker) {
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := w.stream.Consumer(ctx, w.cfg.consumer)
		if err != nil {
			b.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the worker did not settle: %d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
