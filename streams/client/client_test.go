package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// TestClientRoundTrip drives every verb of the client against a real
// worker on an embedded JetStream server: Send, Snapshot, Follow, Infer,
// Doctor and Errors.
func TestClientRoundTrip(t *testing.T) {
	r := workertest.Start(t)
	c, err := client.New(r.Conn, client.WithSource("urn:test:client"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if _, err := c.Snapshot(ctx, "c1"); !errors.Is(err, streams.ErrUnknownConversation) {
		t.Fatalf("snapshot before any event: %v, want ErrUnknownConversation", err)
	}
	views, err := c.Follow(ctx, "c1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var last *client.Sent
	for _, m := range []map[string]any{
		{"id": "u1", "role": "user", "content": "hello"},
		{"id": "a1", "parentId": "u1", "role": "assistant", "content": "hi"},
	} {
		if last, err = c.Send(ctx, "c1", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
	}
	again, err := c.Send(ctx, "c1", streams.TypeMessageAppended,
		map[string]any{"id": "a1", "parentId": "u1", "role": "assistant", "content": "hi"}, client.WithEventID(last.EventID))
	if err != nil || !again.Duplicate {
		t.Fatalf("the same event id again: %+v, %v; want a duplicate", again, err)
	}

	natstest.WaitFor(t, 30*time.Second, "the snapshot at the last event", func() bool {
		s, err := c.Snapshot(ctx, "c1")
		return err == nil && s.Version == last.Sequence
	})
	for v := range views {
		if v.Version == last.Sequence {
			if len(v.FlatList) != 2 {
				t.Fatalf("followed view has %d messages, want 2", len(v.FlatList))
			}
			break
		}
	}

	ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "c1"})
	if err != nil || ev.Type() != streams.TypeInferenceContext {
		t.Fatalf("infer: %v, %v", ev, err)
	}
	var ic streams.InferenceContext
	if err := json.Unmarshal(ev.Data(), &ic); err != nil || len(ic.Messages) < 2 {
		t.Fatalf("inference context: %d messages (want the two sent, and what the pipeline adds), %v", len(ic.Messages), err)
	}
	if ev, err := c.Doctor(ctx, "c1"); err != nil || ev.Type() != streams.TypeDoctorDiagnosis {
		t.Fatalf("doctor: %v, %v", ev, err)
	}

	// An event the contract refuses is recorded, and Errors reads it.
	bad, err := c.Send(ctx, "c1", streams.TypeMessageAppended, map[string]any{"role": "user"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the rejection recorded", func() bool {
		errs, err := c.Errors(ctx, "c1")
		if err != nil {
			return false
		}
		for _, e := range errs {
			var rej streams.EventRejected
			if e.Event.Type() == streams.TypeEventRejected && json.Unmarshal(e.Event.Data(), &rej) == nil &&
				rej.Sequence == bad.Sequence && rej.Code == streams.CodeMissingID {
				return true
			}
		}
		return false
	})
}

// TestClientRefusesWildcards: Watch, Deltas and Follow took "*" and ">"
// as ids and returned every conversation's data. Every verb refuses an id
// that cannot name a conversation, before it touches the server.
func TestClientRefusesWildcards(t *testing.T) {
	r := workertest.Start(t)
	c, err := client.New(r.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"*", ">", "a.b", "", "a*", "chat >"} {
		var errs []error
		_, err := c.Watch(ctx, id)
		errs = append(errs, err)
		_, err = c.Deltas(ctx, id)
		errs = append(errs, err)
		_, err = c.Follow(ctx, id, time.Second)
		errs = append(errs, err)
		_, err = c.Snapshot(ctx, id)
		errs = append(errs, err)
		_, err = c.Send(ctx, id, streams.TypeMessageAppended, map[string]any{"id": "m"})
		errs = append(errs, err)
		for i, err := range errs {
			if !errors.Is(err, streams.ErrInvalidConfig) {
				t.Errorf("%q, verb %d: %v, want ErrInvalidConfig", id, i, err)
			}
		}
	}
}
