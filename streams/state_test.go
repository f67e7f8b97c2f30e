package streams

import (
	"context"
	"testing"
	"time"
)

// TestReadLoadedStateDoesNotSkipPendingEvents: a conversation loaded for an
// inference request is as stored; events after that may be pending with a
// crashed worker. The first event applied to it must not jump over them.
func TestReadLoadedStateDoesNotSkipPendingEvents(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	c := newClient(t, nc)
	ctx := context.Background()

	r := startWorker(t, nc)
	if _, err := c.Send(ctx, "gap", TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
		t.Fatal(err)
	}
	waitVersion(t, c, "gap", 1, 10*time.Second)
	r.stop(t)
	// Two events no worker has seen: the first stands for one a crashed
	// worker holds unacknowledged.
	e1, err := c.Send(ctx, "gap", TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "parentId": "m1"})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := c.Send(ctx, "gap", TypeMessageAppended, map[string]any{"id": "m3", "role": "user", "parentId": "m2"})
	if err != nil {
		t.Fatal(err)
	}

	w := provisionedWorker(t, nc)
	w.lanes = newLanes(1, 4, cacheConfig{conversations: 10})
	defer w.lanes.shutdown()
	l := w.lanes.all[0]

	loaded, err := w.loadForRead(ctx, "gap")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var read *convState
	if err := w.lanes.call(ctx, l, func() { read = w.stateForRead(l, "gap", loaded) }); err != nil || read != loaded {
		t.Fatalf("read: %v; the lane did not take the state loaded", err)
	}
	if read.conv.Len() != 1 || !read.unverified {
		t.Fatalf("read state: %d messages, unverified %v", read.conv.Len(), read.unverified)
	}
	var st *convState
	var skip bool
	if err := w.lanes.call(ctx, l, func() { st, skip, err = w.stateForEvent(ctx, l, "gap", e2.Sequence, nil) }); err != nil {
		t.Fatal(err)
	}
	if skip || st.conv.Len() != 2 || st.seq != e2.Sequence-1 {
		t.Fatalf("state for the second event: skip %v, %d messages, seq %d", skip, st.conv.Len(), st.seq)
	}
	if _, ok := st.conv.Get("m2"); !ok {
		t.Fatal("the pending event was jumped over")
	}
	if err := w.lanes.call(ctx, l, func() { _, skip, err = w.stateForEvent(ctx, l, "gap", e1.Sequence, nil) }); err != nil || !skip {
		t.Fatalf("the pending event, redelivered: skip %v, %v", skip, err)
	}
}
