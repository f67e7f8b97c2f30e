package worker

import (
	"context"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestReadLoadedStateDoesNotSkipPendingEvents: a conversation loaded for an
// inference request is as stored; events after that may be pending with a
// crashed worker. The first event applied to it must not jump over them.
func TestReadLoadedStateDoesNotSkipPendingEvents(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	r := StartWorker(t, nc)
	if _, err := c.Send(ctx, "gap", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "gap", 1, 10*time.Second)
	r.Stop(t)
	// Two events no worker has seen: the first stands for one a crashed
	// worker holds unacknowledged.
	e1, err := c.Send(ctx, "gap", streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "assistant", "parentId": "m1"})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := c.Send(ctx, "gap", streams.TypeMessageAppended, map[string]any{"id": "m3", "role": "user", "parentId": "m2"})
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
	if err := w.lanes.call(ctx, l, func() { read = w.stateForRead(l, "gap", loaded, l.cache.Lets()) }); err != nil || read != loaded {
		t.Fatalf("read: %v; the lane did not take the state loaded", err)
	}
	if read.conv.Len() != 1 || !read.unverified {
		t.Fatalf("read state: %d messages, unverified %v", read.conv.Len(), read.unverified)
	}
	var st *convState
	var skip bool
	if err := w.lanes.call(ctx, l, func() { st, skip, err = w.stateForEvent(ctx, l, "gap", e2.Sequence, 0, nil) }); err != nil {
		t.Fatal(err)
	}
	if skip || st.conv.Len() != 2 || st.seq != e2.Sequence-1 {
		t.Fatalf("state for the second event: skip %v, %d messages, seq %d", skip, st.conv.Len(), st.seq)
	}
	if _, ok := st.conv.Get("m2"); !ok {
		t.Fatal("the pending event was jumped over")
	}
	if err := w.lanes.call(ctx, l, func() { _, skip, err = w.stateForEvent(ctx, l, "gap", e1.Sequence, 0, nil) }); err != nil || !skip {
		t.Fatalf("the pending event, redelivered: skip %v, %v", skip, err)
	}
}

// TestStateForReadKeepsOnlyCurrent: a lane keeps a state loaded off it for
// a read unless its cache let a state go since the read counted lets (a
// copy let go may be newer); the read gets the state either way.
func TestStateForReadKeepsOnlyCurrent(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	w := provisionedWorker(t, nc)
	w.lanes = newLanes(1, 4, cacheConfig{conversations: 10})
	defer w.lanes.shutdown()
	l := w.lanes.all[0]
	ctx := context.Background()
	loaded := func(id string) *convState {
		return newState(w.newReplay(id, 1), 0, snapshotHead{}, 1)
	}

	var lets uint64
	var got *convState
	var held bool
	run := func(fn func()) {
		t.Helper()
		if err := w.lanes.call(ctx, l, fn); err != nil {
			t.Fatal(err)
		}
	}
	run(func() { lets = l.cache.Lets() })
	a := loaded("a")
	run(func() { got = w.stateForRead(l, "a", a, lets); held = l.cache.Peek("a") == a })
	if got != a || !held {
		t.Fatalf("nothing let go: read %p (want %p), held %v", got, a, held)
	}
	run(func() { lets = l.cache.Lets(); l.cache.Drop("a") })
	b := loaded("b")
	run(func() { got = w.stateForRead(l, "b", b, lets); held = l.cache.Peek("b") != nil })
	if got != b || held {
		t.Fatalf("a state let go meanwhile: read %p (want %p), held %v (want false)", got, b, held)
	}
}
