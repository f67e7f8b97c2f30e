package worker

import (
	"context"
	"testing"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProvision creates the stream and bucket as Storage says, then brings
// an existing stream's covered settings in line and leaves the rest alone.
func TestProvision(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := streams.NewSubjects("acme.chat")
	stream, kv, err := Provision(ctx, js, s, Storage{StreamMaxAge: time.Hour, DuplicateWindow: 30 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	if cfg.Name != "ACME_CHAT_EVENTS" || cfg.Subjects[0] != "acme.chat.events.>" || cfg.MaxAge != time.Hour ||
		cfg.Duplicates != 30*time.Second || cfg.MaxBytes != -1 || !cfg.AllowDirect || cfg.Replicas != 1 {
		t.Errorf("stream config %+v", cfg)
	}
	if kv.Bucket() != "ACME_CHAT_SNAPSHOTS" {
		t.Errorf("bucket %s", kv.Bucket())
	}

	// An operator's change outside Storage survives; Storage's apply.
	cfg.MaxMsgSize = 2 << 20
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	stream, _, err = Provision(ctx, js, s, Storage{StreamMaxBytes: 1 << 30}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	got := stream.CachedInfo().Config
	if got.MaxMsgSize != 2<<20 || got.MaxBytes != 1<<30 || got.MaxAge != 0 || got.Duplicates != DuplicateWindow {
		t.Errorf("after the second Provision: %+v", got)
	}
	if _, _, err := Provision(ctx, js, s, Storage{StreamReplicas: -1}, nil); err == nil {
		t.Error("negative replicas accepted")
	}
}
