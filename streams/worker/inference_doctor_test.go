package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestDoctorOverNATS asks a worker for the diagnosis of a conversation
// whose branch index points past its branches, so that its replies are
// hidden, and of one that does not exist.
func TestDoctorOverNATS(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	worker.StartWorker(t, nc, worker.WithPipelines(worker.SlimPipelines()))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	for _, m := range []map[string]any{
		{"id": "u1", "role": "user", "content": "hi", "createdAt": 1.0, "metadata": map[string]any{"activeBranchIndex": 2.0}},
		{"id": "a1", "role": "assistant", "content": "one", "parentId": "u1", "createdAt": 2.0},
		{"id": "a2", "role": "assistant", "content": "two", "parentId": "u1", "createdAt": 3.0},
		{"id": "u2", "role": "user", "content": "more", "parentId": "a2", "createdAt": 4.0},
	} {
		if _, err := c.Send(ctx, "doc", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
	}
	stored := natstest.WaitCaughtUp(t, c, "doc", 20*time.Second)

	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ev, err := c.Doctor(rctx, "doc")
	if err != nil {
		t.Fatal(err)
	}
	natstest.CheckEvent(t, ev) // the reply matches its schema
	got := natstest.InferData[streams.DoctorDiagnosis](t, ev, streams.TypeDoctorDiagnosis)
	if got.ConversationID != "doc" || got.Version != stored.Version || got.Diagnosis == nil || len(got.Diagnosis.Findings) == 0 {
		t.Fatalf("diagnosis = %+v", got)
	}
	f := got.Diagnosis.Findings[0]
	if f.Kind != conversation.KindStaleBranchIndex || f.Repair == nil {
		t.Errorf("finding = %+v", f)
	}
	t.Logf("%s on %s: %s", f.Kind, f.MessageID, f.Explanation)

	ev, err = c.Doctor(rctx, "never-seen")
	if err != nil {
		t.Fatal(err)
	}
	if rej := natstest.InferData[streams.EventRejected](t, ev, streams.TypeEventRejected); rej.Code != streams.CodeNotFound {
		t.Errorf("unknown conversation: %+v", rej)
	}
}
