package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestErasePermissions: a worker holding WorkerPermissions erases what a
// conversation left in every store; a ui or orchestrator user may not ask
// for it, a ui user granted WithErase may.
func TestErasePermissions(t *testing.T) {
	s, _ := streams.NewSubjects("acme")
	perms := map[string]streams.Permissions{
		"worker":  streams.WorkerPermissions(s),
		"ui":      streams.UIClientPermissions(s),
		"orch":    streams.OrchestratorPermissions(s),
		"uierase": streams.UIClientPermissions(s, streams.WithErase()),
	}
	var b strings.Builder
	b.WriteString("authorization { users: [\n")
	for user, p := range perms {
		fmt.Fprintf(&b, "  { user: %s, password: %s-pw, permissions: { publish: { allow: %s }, subscribe: { allow: %s }, allow_responses: %v } }\n",
			user, user, natstest.QuoteList(p.Publish), natstest.QuoteList(p.Subscribe), p.AllowResponses)
	}
	b.WriteString("] }\n")
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(),
		ConfigFile: natstest.WriteConfig(t, b.String())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	conn := func(user string) *client.Client {
		nc, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: user, Password: user + "-pw"},
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return natstest.NewClient(t, nc, client.WithSubjects(s))
	}
	StartWorker(t, conn("worker").Conn(), WithSubjects(s))
	ui := conn("ui")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sent, err := ui.Send(ctx, "chat", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ui.Send(ctx, "chat", streams.TypeMessageDeleted, map[string]any{"id": "nope"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ui.RequestReply(ctx, streams.ReplyRequest{ConversationID: "chat"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, ui, "chat", sent.Sequence, 30*time.Second)
	natstest.WaitFor(t, 30*time.Second, "the error record", func() bool {
		errs, err := ui.Errors(ctx, "chat")
		return err == nil && len(errs) > 0
	})

	for _, user := range []string{"ui", "orch"} {
		short, cancel := context.WithTimeout(ctx, time.Second)
		if r, err := conn(user).Erase(short, "chat", user); err == nil {
			t.Errorf("%s erased a conversation: %+v", user, r)
		} else {
			t.Logf("%s: %v", user, err)
		}
		cancel()
	}
	if _, err := ui.Snapshot(ctx, "chat"); err != nil {
		t.Fatalf("the refused erasures erased: %v", err)
	}
	r, err := conn("uierase").Erase(ctx, "chat", "support ticket 7")
	if err != nil {
		t.Fatal(err)
	}
	// The refused delete is no longer in the stream: the worker removes
	// what it refuses.
	if e := r.Erased; e.Events != 1 || e.Snapshots < 1 || e.Errors < 1 || e.Replies != 1 || e.Workers != 1 || len(r.PurgedOnly) != 0 {
		t.Errorf("receipt %+v: want the event, the snapshot, the error record, the reply request, 1 worker, all overwritten", r)
	}
	if _, err := ui.Snapshot(ctx, "chat"); !errors.Is(err, streams.ErrUnknownConversation) {
		t.Errorf("snapshot after the erasure: %v, want ErrUnknownConversation", err)
	}
}

// TestErasuresCover: a checkpoint queued before an erasure (its state no
// later than the erasure's cut) is of the erased conversation; one of the
// conversation started afterwards, or of another, is not.
func TestErasuresCover(t *testing.T) {
	var e erasures
	if e.covers("c1", 1) {
		t.Fatal("nothing erased covers a checkpoint")
	}
	e.add("c1", 100)
	e.add("c1", 40) // an older erasure's answer, late
	for _, tc := range []struct {
		id   string
		seq  uint64
		want bool
	}{{"c1", 99, true}, {"c1", 100, true}, {"c1", 101, false}, {"c2", 50, false}} {
		if got := e.covers(tc.id, tc.seq); got != tc.want {
			t.Errorf("covers(%s, %d) = %v, want %v", tc.id, tc.seq, got, tc.want)
		}
	}
}

// TestEraseBucketDenyingDeletes: in a snapshot bucket nats.go's
// CreateKeyValue made (as an earlier release did), which denies deletes,
// an erasure purges the conversation's revisions and names the bucket's
// stream in the receipt; erasing it again erases nothing.
func TestEraseBucketDenyingDeletes(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := streams.NewSubjects("")
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: s.SnapshotBucket(), History: 1, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	sent, err := c.Send(ctx, "old", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "old", sent.Sequence, 30*time.Second)
	r, err := c.Erase(ctx, "old", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Erased.Events != 1 || r.Erased.Snapshots != 1 || len(r.PurgedOnly) != 1 || r.PurgedOnly[0] != "KV_"+s.SnapshotBucket() {
		t.Errorf("receipt %+v: want the event overwritten, the snapshot purged and named", r)
	}
	if _, err := c.Snapshot(ctx, "old"); !errors.Is(err, streams.ErrUnknownConversation) {
		t.Errorf("snapshot after the erasure: %v, want ErrUnknownConversation", err)
	}
	again, err := c.Erase(ctx, "old", "")
	if err != nil {
		t.Fatal(err)
	}
	if e := again.Erased; e.Events+e.Chunks+e.Snapshots+e.Checkpoints+e.Errors+e.Replies != 0 || len(again.PurgedOnly) != 0 {
		t.Errorf("second erasure %+v: want nothing left to erase", again)
	}
}

// TestMisdirectedErasesWarnedOnce: erase requests whose reply subject is
// outside the worker's inbox are carried out (their receipts kept) but
// not answered, and the worker warns of them once, not once each: a
// client can send many, and a line each would flood the log.
func TestMisdirectedErasesWarnedOnce(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	var logs natstest.SyncBuffer
	StartWorker(t, nc, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	c := natstest.NewClient(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	aimed, err := nc.SubscribeSync("elsewhere.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	receipts, err := c.JetStream().Stream(ctx, c.Subjects().ReceiptsStream())
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := range n {
		conv := fmt.Sprintf("aimed-%d", i)
		sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hello"})
		if err != nil {
			t.Fatal(err)
		}
		natstest.WaitVersion(t, c, conv, sent.Sequence, 60*time.Second)
		if err := nc.PublishRequest(c.Subjects().Erase(conv), "elsewhere."+conv, []byte(`{"by":"test"}`)); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, 60*time.Second, "the receipt of "+conv, func() bool {
			_, err := receipts.GetLastMsgForSubject(ctx, c.Subjects().Receipts(conv))
			return err == nil
		})
	}
	if m, err := aimed.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("an erase answer went to %s: %s", m.Subject, m.Data)
	}
	warned := 0
	for _, line := range logs.Lines() {
		if strings.Contains(string(line), "erase answer not sent: its reply subject is outside") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings of %d misdirected erase answers, want 1:\n%s", warned, n, logs.String())
	}
}
