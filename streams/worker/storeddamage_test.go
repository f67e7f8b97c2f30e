package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
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
