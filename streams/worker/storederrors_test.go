package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// waitErrors polls Client.Errors until conv has at least n stored reports.
func waitErrors(t testing.TB, c *client.Client, conv string, n int, timeout time.Duration) []client.StoredError {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := c.Errors(context.Background(), conv)
		if err == nil && len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d stored reports of %s: %d, %v", n, conv, len(got), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStoredErrorsReadLater requires a rejection and a pipeline failure to
// be kept in the errors stream, readable by a client that was not
// listening when they were published: a new connection, after the worker
// that reported them has stopped. Before the errors stream they went out
// on core NATS only, and Errors found nothing.
func TestStoredErrorsReadLater(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc, WithPipelines(SlimPipelines()))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()

	const conv = "stored"
	if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	bad, err := c.Send(ctx, conv, streams.TypeMessageUpdated, map[string]any{"id": "nope", "content": "x"}, client.WithEventID("update-missing"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: conv, Pipeline: "failing"}, client.WithEventID("fail-1")); err != nil {
		t.Fatal(err)
	}
	if none, err := c.Errors(ctx, "quiet"); err != nil || len(none) != 0 {
		t.Fatalf("errors of a conversation without any: %v, %v", none, err)
	}
	waitErrors(t, c, conv, 2, 20*time.Second)
	r.Stop(t)

	// A client that was never subscribed, on a connection of its own.
	later := natstest.NewClient(t, natstest.Connect(t, ns))
	got, err := later.Errors(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d stored reports, want 2: %+v", len(got), got)
	}
	rej := got[0].Event
	if rej.Type() != streams.TypeEventRejected {
		t.Fatalf("first report %s, want %s", rej.Type(), streams.TypeEventRejected)
	}
	natstest.CheckEvent(t, rej)
	var data streams.EventRejected
	if err := json.Unmarshal(rej.Data(), &data); err != nil {
		t.Fatal(err)
	}
	if data.Code != streams.CodeNotFound || data.Sequence != bad.Sequence || data.EventID == nil || *data.EventID != "update-missing" || data.ConversationID != conv {
		t.Errorf("rejection %+v, want not_found of update-missing at %d", data, bad.Sequence)
	}
	fail := got[1].Event
	if fail.Type() != streams.TypePipelineFailed || fail.ID() != "failed:fail-1" {
		t.Fatalf("second report %s %s, want %s failed:fail-1", fail.Type(), fail.ID(), streams.TypePipelineFailed)
	}
	natstest.CheckEvent(t, fail)
	if got[0].Sequence >= got[1].Sequence || got[0].Stored.IsZero() {
		t.Errorf("reports not in stream order or without a time: %+v", got)
	}
}

// TestStoredErrorsWithPermissions runs a worker and a client as a NATS user
// holding WorkerPermissions of its prefix: the worker creates its errors
// stream and listens for dead letters, a rejection is stored, and the
// client reads it back, with no permission violation on the way.
func TestStoredErrorsWithPermissions(t *testing.T) {
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(),
		ConfigFile: natstest.WriteConfig(t, natstest.PermissionsConfig(map[string]string{"a": "tenanta"}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	violations := make(chan error, 16)
	nc, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: "a", Password: "a-pw"},
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, _ := streams.NewSubjects("tenanta")
	StartWorker(t, nc, WithSubjects(s))
	c := natstest.NewClient(t, nc, client.WithSubjects(s))
	ctx := context.Background()
	if _, err := c.Send(ctx, "chat", streams.TypeMessageDeleted, map[string]any{"id": "ghost"}); err != nil {
		t.Fatal(err)
	}
	got := waitErrors(t, c, "chat", 1, 20*time.Second)
	if got[0].Event.Type() != streams.TypeEventRejected {
		t.Fatalf("stored %s, want %s", got[0].Event.Type(), streams.TypeEventRejected)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		t.Fatalf("permission violation: %v", err)
	default:
	}
}

// TestErrorsStreamLimits requires the errors stream to be created with the
// default limits, brought in line with a worker's WithErrorRetention when
// it exists, and to keep only the newest records of a conversation past
// its per-conversation limit.
func TestErrorsStreamLimits(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	config := func() jetstream.StreamConfig {
		t.Helper()
		st, err := c.JetStream().Stream(ctx, c.Subjects().ErrorsStream())
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config
	}
	r := StartWorker(t, nc)
	if cfg := config(); cfg.MaxAge != DefaultErrorsMaxAge || cfg.MaxBytes != DefaultErrorsMaxBytes ||
		cfg.MaxMsgsPerSubject != DefaultErrorsMaxPerConversation || cfg.Subjects[0] != "convstream.errors.>" {
		t.Errorf("default errors stream: %+v", cfg)
	}
	r.Stop(t)

	StartWorker(t, nc, WithErrorRetention(ErrorRetention{MaxAge: time.Hour, MaxBytes: -1, MaxPerConversation: 2}),
		WithStorage(Storage{Reconcile: true}))
	if cfg := config(); cfg.MaxAge != time.Hour || cfg.MaxBytes != -1 || cfg.MaxMsgsPerSubject != 2 {
		t.Errorf("errors stream after WithErrorRetention: %+v", cfg)
	}
	for i := range 3 {
		if _, err := c.Send(ctx, "noisy", streams.TypeMessageDeleted, map[string]any{"id": fmt.Sprintf("ghost-%d", i)}, client.WithEventID(fmt.Sprintf("ghost-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 20*time.Second, "the third rejection", func() bool {
		got, err := c.Errors(ctx, "noisy")
		return err == nil && len(got) == 2 && got[1].Event.ID() != "" && strings.Contains(string(got[1].Event.Data()), "ghost-2")
	})
	got, _ := c.Errors(ctx, "noisy")
	if !strings.Contains(string(got[0].Event.Data()), "ghost-1") {
		t.Errorf("kept %s, want ghost-1 and ghost-2", got[0].Event.Data())
	}
}

// TestNoisyConversationKeepsOthersRecords: 5,000 rejections spread over 100
// conversation ids, in an errors stream whose byte limit holds a fraction
// of them, used to evict every other conversation's records (the oldest
// went first, across conversations). A conversation's records are bounded
// by its own cap, and past the stream's byte limit new records are not
// kept (their subscribers still get them): a quiet conversation's earlier
// records are all still there, and every rejection was reported without
// an error.
func TestNoisyConversationKeepsOthersRecords(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := streams.NewSubjects(streams.DefaultPrefix)
	want := errorsStreamConfig(s, Storage{}, ErrorRetention{MaxBytes: 256 << 10, MaxPerConversation: 20})
	if err := provisionErrors(ctx, js, want, false, natstest.TestLogger(t)); err != nil {
		t.Fatal(err)
	}
	rep := &reports{js: js, subjects: s, source: "urn:test", log: natstest.FailureLogger(t, 5)}
	reject := func(conv string, i int) {
		t.Helper()
		id := fmt.Sprintf("%s-%d", conv, i)
		if err := rep.rejection(ctx, "rejected:"+id, streams.EventRejected{EventID: &id, Subject: s.Events(conv),
			Code: streams.CodeNotFound, Reason: strings.Repeat("no such message ", 8), ConversationID: conv}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	for i := range 10 {
		reject("quiet", i)
	}
	for i := range 5000 {
		reject(fmt.Sprintf("noisy-%d", i%100), i)
	}
	c := natstest.NewClient(t, nc)
	got, err := c.Errors(ctx, "quiet")
	if err != nil || len(got) != 10 {
		t.Fatalf("quiet kept %d of its 10 records: %v", len(got), err)
	}
	st, err := js.Stream(ctx, s.ErrorsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("errors stream: %d records, %d bytes", info.State.Msgs, info.State.Bytes)
	if info.State.Bytes > uint64(want.MaxBytes) {
		t.Errorf("errors stream holds %d bytes, over its limit of %d", info.State.Bytes, want.MaxBytes)
	}
}

// TestErrorsStreamFitsSmallStore: the errors stream's default byte limit
// (256 MiB), which the server reserves, kept a worker from starting on a
// server with less storage. It is halved until it fits.
func TestErrorsStreamFitsSmallStore(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		JetStreamMaxStore: 64 << 20, JetStreamMaxMemory: 64 << 20, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	st, err := c.JetStream().Stream(context.Background(), c.Subjects().ErrorsStream())
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.MaxBytes; got <= 0 || got > 64<<20 {
		t.Errorf("errors stream byte limit %d on a 64 MiB store", got)
	}
	if _, err := c.Send(context.Background(), "small", streams.TypeMessageDeleted, map[string]any{"id": "ghost"}); err != nil {
		t.Fatal(err)
	}
	waitErrors(t, c, "small", 1, 30*time.Second)
}
