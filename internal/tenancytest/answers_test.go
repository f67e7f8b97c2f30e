package tenancytest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
)

// TestAnswersOnlyIntoTheInbox: a client sends the worker an inference
// request and a doctor request (and, on the server without users, an
// erase request) whose reply subject is not its inbox but a deltas
// subject. nats-server checks no permission on a reply subject, so
// the worker would answer there with its own rights:
//
//   - on a server without users (make run), a client aims them at a
//     conversation's deltas subject: before, every UI following it
//     received the worker's answers among its deltas;
//   - where tenants share an account, a ui user aims them at the other
//     tenant's deltas: the worker's role refuses the publish, and before,
//     each such request cost a permission violation on the worker's
//     connection (an async error, counted and logged).
//
// The worker answers only into its own inbox prefix: nothing reaches the
// subject aimed at, no violation is met, and the same requests from the
// inbox are answered.
func TestAnswersOnlyIntoTheInbox(t *testing.T) {
	t.Run("no users", testAnswersNoUsers)
	t.Run("shared account", testAnswersSharedAccount)
}

func testAnswersNoUsers(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	startWorker(t, nc, worker.WithPipelines(workertest.Pipelines()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sent, err := c.Send(ctx, "chat", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "chat", sent.Sequence, 60*time.Second)

	deltas, err := nc.SubscribeSync(c.Subjects().Snapshots("chat"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	other := natstest.Connect(t, ns)
	aimRequests(t, other, c.Subjects(), c.Subjects().Snapshots("chat"))
	// An erasure of another conversation, its answer aimed likewise: made,
	// and its receipt kept, but not answered there.
	if _, err := c.Send(ctx, "gone", streams.TypeMessageAppended, map[string]any{"id": "g1", "role": "user", "content": "bye"}); err != nil {
		t.Fatal(err)
	}
	if err := other.PublishRequest(c.Subjects().Erase("gone"), c.Subjects().Snapshots("chat"), []byte(`{"by":"test"}`)); err != nil {
		t.Fatal(err)
	}
	if m, err := deltas.NextMsg(3 * time.Second); err == nil {
		t.Errorf("the conversation's deltas subject received %s: %.200s", m.Header.Get("Ce-Type"), m.Data)
	}
	answeredFromInbox(t, ctx, c)
	if _, err := c.Erase(ctx, "gone", "test"); err != nil {
		t.Errorf("the erase request from the inbox: %v", err)
	}
}

func testAnswersSharedAccount(t *testing.T) {
	ns := startSharedAccount(t, nil)
	v := &violations{}
	sA, _ := streams.NewSubjects("tenanta")
	sB, _ := streams.NewSubjects("tenantb")
	inbox := tenantInbox("tenanta")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startWorker(t, isolationConn(t, ns.ClientURL(), "tenanta-worker", inbox, v, "worker"),
		worker.WithSubjects(sA), worker.WithPipelines(workertest.Pipelines()))

	uinc := isolationConn(t, ns.ClientURL(), "tenanta-ui", inbox, v, "ui")
	ui := natstest.NewClient(t, uinc, client.WithSubjects(sA))
	sent, err := ui.Send(ctx, "chat", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "tenanta's words"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, ui, "chat", sent.Sequence, 60*time.Second)

	victim := subscribeVictim(t, ns, v)
	aimRequests(t, uinc, sA, sB.Snapshots("victim"))
	if m, err := victim.NextMsg(2 * time.Second); err == nil {
		t.Errorf("the other tenant's subject received %s: %.200s", m.Header.Get("Ce-Type"), m.Data)
	}
	answeredFromInbox(t, ctx, ui)
	for _, label := range []string{"worker", "ui", "tenantb-ui"} {
		if vs := v.of(label); len(vs) > 0 {
			t.Errorf("%s met permission violations: %q", label, vs)
		}
	}
}

// aimRequests publishes an inference and a doctor request for conversation
// chat of s on nc with the reply subject reply.
func aimRequests(t *testing.T, nc *nats.Conn, s streams.Subjects, reply string) {
	t.Helper()
	requests := []struct {
		subject, typ string
		data         any
	}{
		{s.Inference("chat"), streams.TypeInferenceRequested, streams.InferenceRequest{ConversationID: "chat", Format: "raw"}},
		{s.Doctor("chat"), streams.TypeDoctorRequested, streams.DoctorRequest{ConversationID: "chat"}},
	}
	for _, r := range requests {
		ev, err := streams.NewEvent("aimed-"+r.typ, r.typ, "urn:test", "chat", r.data)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := streams.EncodeEvent(r.subject, ev, streams.Structured)
		if err != nil {
			t.Fatal(err)
		}
		msg.Reply = reply
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// answeredFromInbox checks that c's inference and doctor requests for
// conversation chat, from its inbox, are answered.
func answeredFromInbox(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	if ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "chat", Format: "raw"}); err != nil || ev.Type() != streams.TypeInferenceContext {
		t.Errorf("the inference request from the inbox: %v, %v", ev, err)
	}
	if ev, err := c.Doctor(ctx, "chat"); err != nil || ev.Type() != streams.TypeDoctorDiagnosis {
		t.Errorf("the doctor request from the inbox: %v, %v", ev, err)
	}
}
