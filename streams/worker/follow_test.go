package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestFollowResyncWatches makes a follower miss a delta (one whose base is
// not its version) while the bucket is behind it: the follower waits for
// the bucket with a watch on the key, not by reading the snapshot again
// and again, and goes on from the stored snapshot once it has the version.
func TestFollowResyncWatches(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	StartWorker(t, nc, WithLogger(natstest.TestLogger(t)))
	c := natstest.NewClient(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const conv = "fw"
	live := conversation.NewConversation()
	send := func(i int) *client.Sent { return sendChained(t, c, live, conv, i) }
	var last *client.Sent
	for i := range 3 {
		last = send(i)
	}
	natstest.WaitVersion(t, c, conv, last.Sequence, 10*time.Second)
	views, err := c.Follow(ctx, conv, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	next := func() *streams.View {
		t.Helper()
		select {
		case v := <-views:
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("no view")
			return nil
		}
	}
	if v := next(); v.Version != last.Sequence || len(v.FlatList) != 3 {
		t.Fatalf("first view: version %d of %d messages, want %d of 3", v.Version, len(v.FlatList), last.Sequence)
	}

	var reads atomic.Int64
	counter, err := nc.Subscribe("$JS.API.DIRECT.GET.>", func(*nats.Msg) { reads.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = counter.Unsubscribe() }()
	if err := nc.Flush(); err != nil { // counting from the first read
		t.Fatal(err)
	}
	// A delta the follower cannot apply, of the version the next event
	// will have (the stream holds only this conversation's events).
	ev, err := streams.NewEvent("gap", streams.TypeSnapshotDelta, "urn:test", conv,
		streams.SnapshotDelta{ConversationID: conv, Version: last.Sequence + 1, BaseVersion: last.Sequence + 100, From: 2, Length: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := streams.EncodeEvent(c.Subjects().Snapshots(conv), ev, streams.Structured)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	const waited = 300 * time.Millisecond
	time.Sleep(waited) // the follower waits for the bucket meanwhile
	sent := send(3)
	if sent.Sequence != last.Sequence+1 {
		t.Fatalf("the next event is at %d, not %d", sent.Sequence, last.Sequence+1)
	}
	if v := next(); v.Version != sent.Sequence || len(v.FlatList) != 4 {
		t.Fatalf("after the gap: version %d of %d messages, want %d of 4", v.Version, len(v.FlatList), sent.Sequence)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n > 1 {
		t.Errorf("%d direct gets while the follower waited %v for the bucket", n, waited)
	}
}

// TestFollowCatchesUpWithTheBucket starts a follower after a conversation's
// last delta and before the bucket stored it (stores at most every 2 s
// here), with no later event to reveal the gap: the follower reads the
// stored snapshot again and sends the version it missed.
func TestFollowCatchesUpWithTheBucket(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	StartWorker(t, nc, WithLogger(natstest.TestLogger(t)),
		WithAckWait(30*time.Second), WithSnapshotInterval(2*time.Second), WithSnapshotMaxInterval(2*time.Second))
	c := natstest.NewClient(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const conv = "fc"
	live := conversation.NewConversation()
	first := sendChained(t, c, live, conv, 0)
	natstest.WaitVersion(t, c, conv, first.Sequence, 30*time.Second)
	deltas, err := c.Deltas(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	second := sendChained(t, c, live, conv, 1)
	for d := range deltas {
		if d.Version >= second.Sequence {
			break
		}
	}
	views, err := c.Follow(ctx, conv, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	var seen []uint64
	for {
		select {
		case v := <-views:
			seen = append(seen, v.Version)
			if v.Version == second.Sequence {
				if len(v.FlatList) != 2 {
					t.Fatalf("version %d holds %d messages, want 2", v.Version, len(v.FlatList))
				}
				t.Logf("views sent: versions %v", seen)
				return
			}
		case <-deadline:
			t.Fatalf("the follower never sent version %d (sent %v)", second.Sequence, seen)
		}
	}
}
