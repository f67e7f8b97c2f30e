package orchestrator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
)

// TestOrchestratorRole runs the orchestrator as a user holding only
// streams.RoleOrchestrator on a server that authenticates (a tenant of
// natsembed), beside a worker holding RoleWorker, which creates the
// replies stream: the orchestrator takes a reply request, streams the
// built-in model's reply to its end, refuses a request for a model it
// lacks on the errors subject, and answers a stop request, without a
// single permission violation on its connection. It runs the same as the
// worker's user, as cmd/worker --orchestrator does on the worker's
// connection.
func TestOrchestratorRole(t *testing.T) {
	for _, user := range []string{"acme-orch", "acme-worker"} {
		t.Run(user, func(t *testing.T) { testOrchestratorAs(t, user) })
	}
}

func testOrchestratorAs(t *testing.T, user string) {
	s, err := streams.NewSubjects("acme")
	if err != nil {
		t.Fatal(err)
	}
	tenant := natsembed.Tenant{Prefix: s.Prefix(), Users: []natsembed.TenantUser{
		{User: "acme-worker", Password: "acme-worker-pw", Role: streams.RoleWorker},
		{User: "acme-orch", Password: "acme-orch-pw", Role: streams.RoleOrchestrator},
		{User: "acme-ui", Password: "acme-ui-pw", Role: streams.RoleUI},
	}}
	ns := workertest.Server(t, natsembed.Config{Tenants: []natsembed.Tenant{tenant}})
	var mu sync.Mutex
	var violations []string
	conn := func(user string) *nats.Conn {
		nc, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: user, Password: user + "-pw"},
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				mu.Lock()
				violations = append(violations, user+": "+err.Error())
				mu.Unlock()
			}))
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	workertest.Run(t, conn("acme-worker"), worker.WithSubjects(s), worker.WithPipelines(workertest.Pipelines()))

	onc := conn(user)
	o, err := orchestrator.New(onc, orchestrator.WithSubjects(s),
		orchestrator.WithModel(builtin(t, models.BuiltinConfig{Tokens: 10000, TokensPerChunk: 1, Rate: 50})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("orchestrator: %v", err)
		}
	})

	c, err := client.New(conn("acme-ui"), client.WithSubjects(s))
	if err != nil {
		t.Fatal(err)
	}
	// A request for a model this orchestrator lacks: refused, on the
	// errors subject.
	if _, err := c.RequestReply(ctx, streams.ReplyRequest{ConversationID: "chat-x", MessageID: "a1", Model: "openai:gpt-x"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 60*time.Second, "the refusal", func() bool {
		errs, err := c.Errors(ctx, "chat-x")
		return err == nil && len(errs) == 1
	})
	ask(t, c, "chat-r", "hello", streams.ReplyRequest{MessageID: "a1"})
	natstest.WaitFor(t, 60*time.Second, "some text", func() bool {
		s, _ := message(c, "chat-r", "a1")["content"].(string)
		return len(s) > 20
	})
	ev, err := c.StopReply(ctx, "chat-r", "a1")
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	if ev.Type() != streams.TypeReplyStop {
		t.Errorf("answer %s", ev.Type())
	}
	m := waitEnded(t, c, "chat-r", "a1")
	if s, _ := m["content"].(string); m[streams.FieldStreamStatus] != streams.StreamStopped || !strings.HasPrefix(s, `You said "hello". `) {
		t.Fatalf("reply %v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Errorf("permission violation: %s", v)
	}
}
