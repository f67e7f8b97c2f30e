package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// settledEvents records what a snapshot store's hooks were asked to do
// with events.
type settledEvents struct {
	mu                     sync.Mutex
	acked, naked, rejected []pendingAck
}

func (e *settledEvents) take() (acked, naked, rejected []pendingAck) {
	e.mu.Lock()
	defer e.mu.Unlock()
	acked, naked, rejected = e.acked, e.naked, e.rejected
	e.acked, e.naked, e.rejected = nil, nil, nil
	return acked, naked, rejected
}

// TestSnapshotStoreStandsAlone drives a snapshotStore made with its
// dependencies only (a real bucket, hooks that record what they are asked),
// no Worker around it: a write is stored with a compare-and-set and its
// events acknowledged; a write that conflicts with the stored key hands its
// events back; a snapshot over the size limit is refused, its conversation
// marked degraded and its events handed back to be applied measured.
func TestSnapshotStoreStandsAlone(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	_, kv, err := Provision(ctx, js, cfg.subjects, cfg.storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := newInstruments(cfg.meterProvider)
	if err != nil {
		t.Fatal(err)
	}
	var events settledEvents
	var degraded degradedSet
	ws := newWriters()
	defer ws.stop()
	s := newSnapshotStore(cfg, ws, nc.MaxPayload, ins, &degraded, storeHooks{
		ack: func(_ context.Context, acks []pendingAck) {
			events.mu.Lock()
			events.acked = append(events.acked, acks...)
			events.mu.Unlock()
		},
		nak: func(acks []pendingAck) {
			events.mu.Lock()
			events.naked = append(events.naked, acks...)
			events.mu.Unlock()
		},
		terminate: func(_ context.Context, _ string, acks []pendingAck, _ *streams.RejectError) {
			events.mu.Lock()
			events.rejected = append(events.rejected, acks...)
			events.mu.Unlock()
		},
		checkpointDue: func(*convState) bool { return false },
		// No lane: storeMany is called as a cache that lets its states go
		// calls it (see Worker.release).
		holds: func(*lane, *convState) bool { return false },
	})
	s.open(ctx, kv)

	// A state of conversation id at sequence seq with events acks unstored.
	state := func(id string, seq uint64, acks ...pendingAck) *convState {
		st := &convState{id: id, conv: conversation.NewConversation(), version: seq, seq: seq}
		st.storeQueue().unstored = acks
		return st
	}

	st := state("c1", 7, "ack.1", "ack.2")
	s.storeMany(ctx, nil, []*convState{st})
	acked, naked, rejected := events.take()
	if !slices.Equal(acked, []pendingAck{"ack.1", "ack.2"}) || naked != nil || rejected != nil {
		t.Fatalf("stored: acked %q, naked %q, rejected %q; want both acked", acked, naked, rejected)
	}
	if st.rev == 0 || st.storedSeq != 7 || st.unsaved() {
		t.Errorf("stored: revision %d, stored sequence %d, unsaved %v", st.rev, st.storedSeq, st.unsaved())
	}
	entry, err := kv.Get(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if head, err := snapshotHeadOf(entry.Value()); err != nil || head.Sequence != 7 || entry.Revision() != st.rev {
		t.Errorf("bucket holds %+v at revision %d (%v); want sequence 7 at %d", head, entry.Revision(), err, st.rev)
	}
	if err := s.check(time.Now().Add(time.Hour)); err != nil {
		t.Errorf("a store succeeded, yet: %v", err)
	}

	// Another state of c1 that has not read the key writes as if it were new.
	other := state("c1", 9, "ack.3")
	s.storeMany(ctx, nil, []*convState{other})
	acked, naked, rejected = events.take()
	if acked != nil || !slices.Equal(naked, []pendingAck{"ack.3"}) || rejected != nil {
		t.Fatalf("conflict: acked %q, naked %q, rejected %q; want ack.3 handed back", acked, naked, rejected)
	}

	// Over the size limit: refused, not retried, and marked degraded.
	s.maxBytes = 16
	big := state("c2", 4, "ack.4")
	s.storeMany(ctx, nil, []*convState{big})
	acked, naked, rejected = events.take()
	if acked != nil || !slices.Equal(naked, []pendingAck{"ack.4"}) || rejected != nil {
		t.Fatalf("too large: acked %q, naked %q, rejected %q; want ack.4 handed back", acked, naked, rejected)
	}
	if !degraded.strict("c2", 4) {
		t.Error("a refused snapshot's events are not measured when applied again")
	}
	if _, err := kv.Get(ctx, "c2"); err == nil {
		t.Error("a snapshot over the limit was stored")
	}
}
