package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProvision creates the stream and bucket as Storage says, then refuses
// an existing stream whose covered settings differ, naming them, or with
// Reconcile brings them in line and leaves the rest alone.
func TestProvision(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := streams.NewSubjects("acme.chat")
	stream, kv, err := worker.Provision(ctx, js, s, worker.Storage{StreamMaxAge: time.Hour, DuplicateWindow: 30 * time.Second}, natstest.TestLogger(t))
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
	// Without Reconcile, settings that differ are named and left as they are.
	_, _, err = worker.Provision(ctx, js, s, worker.Storage{StreamMaxBytes: 1 << 30}, natstest.TestLogger(t))
	if !errors.Is(err, worker.ErrSettingsDiffer) || !strings.Contains(err.Error(), "max bytes -1 (this worker: 1073741824)") ||
		!strings.Contains(err.Error(), "max age 1h0m0s (this worker: 0s)") || !strings.Contains(err.Error(), "duplicate window 30s (this worker: 2m0s)") {
		t.Errorf("Provision with other settings: %v, want ErrSettingsDiffer naming them", err)
	}
	stream, _, err = worker.Provision(ctx, js, s, worker.Storage{StreamMaxBytes: 1 << 30, Reconcile: true}, natstest.TestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	got := stream.CachedInfo().Config
	if got.MaxMsgSize != 2<<20 || got.MaxBytes != 1<<30 || got.MaxAge != 0 || got.Duplicates != worker.DuplicateWindow {
		t.Errorf("after the second Provision: %+v", got)
	}
	if _, _, err := worker.Provision(ctx, js, s, worker.Storage{StreamReplicas: -1}, nil); err == nil {
		t.Error("negative replicas accepted")
	}
}
