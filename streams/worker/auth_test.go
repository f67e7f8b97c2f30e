package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// TestAuthentication starts the embedded server requiring each kind of
// authentication (through Config.Auth or a configuration file) and
// requires: an anonymous client is refused, a worker connected with
// ConnConfig applies an event, a client reads its snapshot.
func TestAuthentication(t *testing.T) {
	tlsFiles := natstest.NewTLS(t)
	op := natstest.NewOperator(t)
	nkeyPub, nkeySeed := natstest.NKeyUser(t)
	cases := []struct {
		name string
		ecfg natsembed.Config
		conn streams.ConnConfig
	}{
		{"user and password", natsembed.Config{Auth: natsembed.Auth{User: "worker", Password: "pw-7f3a"}},
			streams.ConnConfig{User: "worker", Password: "pw-7f3a"}},
		{"token", natsembed.Config{Auth: natsembed.Auth{Token: "tok-91c2"}}, streams.ConnConfig{Token: "tok-91c2"}},
		{"nkey", natsembed.Config{ConfigFile: natstest.WriteConfig(t, "authorization { users: [ { nkey: "+nkeyPub+" } ] }\n")},
			streams.ConnConfig{NKey: nkeySeed}},
		{"creds (operator mode)", natsembed.Config{ConfigFile: natstest.WriteConfig(t, op.ServerConfig())},
			streams.ConnConfig{Creds: op.Creds("worker")}},
		{"TLS with client certificates", natsembed.Config{ConfigFile: natstest.WriteConfig(t, tlsFiles.ServerConfig())},
			streams.ConnConfig{TLSCA: tlsFiles.CA, TLSCert: tlsFiles.ClientCert, TLSKey: tlsFiles.ClientKey}},
		{"TLS and a password", natsembed.Config{ConfigFile: natstest.WriteConfig(t, tlsFiles.ServerConfig()),
			Auth: natsembed.Auth{User: "worker", Password: "pw-tls"}},
			streams.ConnConfig{User: "worker", Password: "pw-tls", TLSCA: tlsFiles.CA, TLSCert: tlsFiles.ClientCert, TLSKey: tlsFiles.ClientKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ecfg := tc.ecfg
			ecfg.Listen, ecfg.StoreDir = "127.0.0.1:-1", t.TempDir()
			ns, err := natsembed.Start(ecfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
			url := ns.ClientURL()

			anon, err := nats.Connect(url, nats.MaxReconnects(0), nats.Timeout(2*time.Second))
			if err == nil {
				anon.Close()
				t.Fatal("an anonymous client connected")
			}
			t.Logf("anonymous client: %v", err)

			conn := tc.conn
			conn.URL, conn.Name = url, "convstream-worker"
			nc, err := streams.Connect(conn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			worker.StartWorker(t, nc)
			c := natstest.NewClient(t, nc)
			if _, err := c.Send(context.Background(), "auth", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
				t.Fatal(err)
			}
			natstest.WaitVersion(t, c, "auth", 1, 10*time.Second)
		})
	}
}

// TestEmbeddedAuthConflicts: half a user, a user and a token, or Auth over
// a configuration file that declares its own are configuration errors.
func TestEmbeddedAuthConflicts(t *testing.T) {
	withUsers := natstest.WriteConfig(t, "authorization { users: [ { user: a, password: b } ] }\n")
	for _, ecfg := range []natsembed.Config{
		{Auth: natsembed.Auth{User: "a"}},
		{Auth: natsembed.Auth{User: "a", Password: "b", Token: "c"}},
		{Auth: natsembed.Auth{Token: "c"}, ConfigFile: withUsers},
		{ConfigFile: filepath.Join(t.TempDir(), "missing.conf")},
	} {
		ecfg.Listen, ecfg.StoreDir = "127.0.0.1:-1", t.TempDir()
		ns, err := natsembed.Start(ecfg)
		if err == nil {
			ns.Shutdown()
			t.Errorf("%v: started", ecfg.Auth)
			continue
		}
		if !errors.Is(err, streams.ErrInvalidConfig) {
			t.Errorf("%v: %v, want ErrInvalidConfig", ecfg.Auth, err)
		}
	}
}

// TestPrefixPermissions runs two workers, each as a NATS user holding
// WorkerPermissions of its own prefix, and requires that both work and
// that tenant A's user can read nothing of tenant B: not its snapshots or
// errors subjects, not its stream or bucket, not its inference; and a
// worker started for B's prefix with A's user does not start.
func TestPrefixPermissions(t *testing.T) {
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(),
		ConfigFile: natstest.WriteConfig(t, natstest.PermissionsConfig(map[string]string{"a": "tenanta", "b": "tenantb"}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	var mu sync.Mutex
	var violations []string
	conn := func(user, label string) *nats.Conn {
		nc, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: user, Password: user + "-pw"},
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				mu.Lock()
				violations = append(violations, label+": "+err.Error())
				mu.Unlock()
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx := context.Background()
	clients := map[string]*client.Client{}
	for user, prefix := range map[string]string{"a": "tenanta", "b": "tenantb"} {
		s, _ := streams.NewSubjects(prefix)
		nc := conn(user, user)
		worker.StartWorker(t, nc, worker.WithSubjects(s), worker.WithPipelines(worker.SlimPipelines()))
		c := natstest.NewClient(t, nc, client.WithSubjects(s))
		if _, err := c.Send(ctx, "chat", streams.TypeMessageAppended, map[string]any{"id": user + "1", "role": "user", "content": "secret of " + user}); err != nil {
			t.Fatal(err)
		}
		natstest.WaitVersion(t, c, "chat", 1, 10*time.Second)
		if _, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "chat"}); err != nil {
			t.Fatalf("%s: own inference: %v", user, err)
		}
		clients[user] = c
	}

	ncA := conn("a", "probe")
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 500*time.Millisecond) }
	// Core subscriptions to B's subjects are refused by the server.
	for _, subj := range []string{"tenantb.snapshots.>", "tenantb.errors.>", "tenantb.events.chat", "$KV.TENANTB_SNAPSHOTS.>", "$KV.TENANTB_CHECKPOINTS.>"} {
		if _, err := ncA.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
	}
	if err := ncA.Flush(); err != nil {
		t.Fatal(err)
	}
	// JetStream: B's stream, bucket and messages.
	jsA, err := jetstream.New(ncA)
	if err != nil {
		t.Fatal(err)
	}
	c1, cancel := short()
	if _, err := jsA.Stream(c1, "TENANTB_EVENTS"); err == nil {
		t.Error("A read B's stream info")
	} else {
		t.Logf("A → TENANTB_EVENTS info: %v", err)
	}
	cancel()
	for _, bucket := range []string{"TENANTB_SNAPSHOTS", "TENANTB_CHECKPOINTS"} {
		c2, cancel := short()
		if _, err := jsA.KeyValue(c2, bucket); err == nil {
			t.Errorf("A opened B's bucket %s", bucket)
		} else {
			t.Logf("A → %s: %v", bucket, err)
		}
		cancel()
	}
	c3, cancel := short()
	if _, err := jsA.OrderedConsumer(c3, "TENANTB_EVENTS", jetstream.OrderedConsumerConfig{}); err == nil {
		t.Error("A created a consumer on B's stream")
	}
	cancel()
	sB, _ := streams.NewSubjects("tenantb")
	c4, cancel := short()
	if _, err := natstest.NewClient(t, ncA, client.WithSubjects(sB)).Infer(c4, streams.InferenceRequest{ConversationID: "chat"}); err == nil {
		t.Error("A ran inference on B's conversation")
	}
	cancel()
	c5, cancel := short()
	if _, err := natstest.NewClient(t, ncA, client.WithSubjects(sB)).Send(c5, "chat", streams.TypeMessageDeleted, map[string]any{"id": "b1"}); err == nil {
		t.Error("A sent an event to B")
	}
	cancel()
	// A worker of B's prefix with A's user cannot start.
	wA, err := worker.New(ncA, worker.WithSubjects(sB))
	if err != nil {
		t.Fatal(err)
	}
	c6, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	if err := wA.Run(c6); err == nil {
		t.Error("a worker of B's prefix ran with A's permissions")
	} else {
		t.Logf("worker of B's prefix with A's user: %v", err)
	}
	cancel()

	// B is untouched.
	if s, err := clients["b"].Snapshot(ctx, "chat"); err != nil || s.Version != 1 {
		t.Errorf("B's snapshot: %v %v", s, err)
	}
	natstest.WaitFor(t, 5*time.Second, "permission violations reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range violations {
			if strings.HasPrefix(v, "probe: ") && strings.Contains(v, "Permissions Violation") {
				n++
			}
		}
		return n >= 4
	})
	mu.Lock()
	for _, v := range violations {
		if !strings.HasPrefix(v, "probe: ") {
			t.Errorf("a worker's own work violated its permissions: %s", v)
		}
		t.Log(v)
	}
	mu.Unlock()
}
