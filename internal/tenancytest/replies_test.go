package tenancytest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
)

// TestOrchestratorMakesNoOtherConsumer: in an account tenants share, an
// orchestrator user takes reply requests only through the consumer the
// worker makes with the replies stream (streams.RepliesConsumer). A push
// consumer of the replies stream aimed at the other tenant's deltas,
// named or not, a durable of another name, and its own consumer turned
// into a push one are all refused, and the other tenant's subject
// receives nothing; it still sets its own consumer's ack wait and
// deliveries, and takes the request waiting. Before, the role could
// create any consumer on the replies stream, and until the first
// orchestrator made its durable nothing else refused a push one: the
// server delivered the tenant's reply requests onto the other tenant's
// subject.
func TestOrchestratorMakesNoOtherConsumer(t *testing.T) {
	ns := startSharedAccount(t, nil)
	v := &violations{}
	sA, _ := streams.NewSubjects("tenanta")
	sB, _ := streams.NewSubjects("tenantb")
	replies := sA.RepliesStream()
	inbox := tenantInbox("tenanta")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	wnc := isolationConn(t, ns.ClientURL(), "tenanta-worker", inbox, v, "worker")
	startWorker(t, wnc, worker.WithSubjects(sA))
	admin := natstest.NewClient(t, wnc, client.WithSubjects(sA)).JetStream()
	natstest.WaitFor(t, 60*time.Second, "the worker's replies consumer", func() bool {
		_, err := admin.Consumer(ctx, replies, streams.RepliesConsumer)
		return err == nil
	})
	ui := natstest.NewClient(t, isolationConn(t, ns.ClientURL(), "tenanta-ui", inbox, v, "ui"), client.WithSubjects(sA))
	if _, err := ui.RequestReply(ctx, streams.ReplyRequest{ConversationID: "chat", Params: map[string]any{"note": "tenanta's"}}); err != nil {
		t.Fatal(err)
	}

	victim := subscribeVictim(t, ns, v)

	onc := isolationConn(t, ns.ClientURL(), "tenanta-orch", inbox, v, "orch")
	ojs, err := jetstream.New(onc)
	if err != nil {
		t.Fatal(err)
	}
	deliver := sB.Snapshots("victim")
	own := streams.RepliesConsumerConfig(streams.RepliesConsumer, streams.DefaultRepliesAckWait, streams.DefaultRepliesMaxDeliver)
	own.DeliverSubject = deliver
	probes := []struct {
		name string
		cfg  jetstream.ConsumerConfig
	}{
		{"an unnamed push consumer", jetstream.ConsumerConfig{DeliverSubject: deliver, AckPolicy: jetstream.AckExplicitPolicy}},
		{"a named push consumer", jetstream.ConsumerConfig{Name: "redirect", DeliverSubject: deliver, AckPolicy: jetstream.AckExplicitPolicy}},
		{"a pull durable of another name", jetstream.ConsumerConfig{Durable: "another", AckPolicy: jetstream.AckExplicitPolicy}},
		{"its own consumer turned into a push one", own},
	}
	for _, p := range probes {
		pctx, stop := context.WithTimeout(ctx, 2*time.Second)
		_, err := ojs.CreateOrUpdateConsumer(pctx, replies, p.cfg)
		stop()
		if err == nil {
			t.Errorf("the orchestrator user created %s on the replies stream", p.name)
		}
	}
	if m, err := victim.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("the other tenant's subject received %s: %s", m.Subject, m.Data)
	}
	natstest.WaitFor(t, 10*time.Second, "the refusals reported", func() bool { return len(v.of("orch")) >= 3 })
	for _, violation := range v.of("orch") {
		if !strings.Contains(violation, "$JS.API.CONSUMER.CREATE."+replies) {
			t.Errorf("the orchestrator's violation %q: want only the refused creates", violation)
		}
	}

	// Its own consumer, with its own settings: the request waiting is its.
	cons, err := ojs.CreateOrUpdateConsumer(ctx, replies, streams.RepliesConsumerConfig(streams.RepliesConsumer, 45*time.Second, 5))
	if err != nil {
		t.Fatalf("the orchestrator's own consumer: %v", err)
	}
	if got := cons.CachedInfo().Config; got.AckWait != 45*time.Second || got.MaxDeliver != 5 || got.DeliverSubject != "" {
		t.Errorf("the orchestrator's consumer: ack wait %v, deliveries %d, delivery subject %q; want 45s, 5 and a pull consumer",
			got.AckWait, got.MaxDeliver, got.DeliverSubject)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var taken int
	for m := range batch.Messages() {
		if !strings.Contains(string(m.Data()), "tenanta's") {
			t.Errorf("the request taken: %s", m.Data())
		}
		if err := m.Ack(); err != nil {
			t.Error(err)
		}
		taken++
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatal(err)
	}
	if taken != 1 {
		t.Errorf("the orchestrator took %d requests, want the 1 waiting", taken)
	}
	for _, label := range []string{"worker", "ui", "tenantb-ui"} {
		if vs := v.of(label); len(vs) > 0 {
			t.Errorf("%s met permission violations: %q", label, vs)
		}
	}
}
