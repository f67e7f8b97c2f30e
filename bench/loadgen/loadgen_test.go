package loadgen

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
)

// TestRuns drives a few conversations through a worker on an embedded
// server, and the same payloads through a raw stream: every event must
// come back, with latencies measured.
func TestRuns(t *testing.T) {
	conn := embeddedServer(t)
	workertest.Run(t, conn())
	ctx := context.Background()
	subjects, err := streams.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	pub, sub := conn(), conn()
	cfg := Config{Conversations: 20, Events: 400, ContentBytes: 64, Wait: 30 * time.Second}
	progress := 0
	cfg.Progress = func(Progress) { progress++ }

	raw, err := Raw(ctx, pub, "t1", cfg)
	if err != nil {
		t.Fatalf("raw: %v (%+v)", err, raw)
	}
	wr, err := Worker(ctx, pub, sub, subjects, "t2", cfg)
	if err != nil {
		t.Fatalf("worker: %v (%+v)", err, wr)
	}
	cfg.Rate, cfg.Warmup = 2000, true
	paced, err := Worker(ctx, pub, sub, subjects, "t3", cfg)
	if err != nil {
		t.Fatalf("worker at %v ev/s: %v", cfg.Rate, err)
	}
	if paced.Events != cfg.Events-cfg.Conversations {
		t.Errorf("warm run measured %d events, want %d", paced.Events, cfg.Events-cfg.Conversations)
	}
	for _, r := range []Result{raw, wr, paced} {
		if r.Received != r.Events || r.Throughput <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 {
			t.Errorf("%s: %+v", r.Name, r)
		}
		t.Logf("%s (rate %v): %.0f ev/s, p50 %v p99 %v", r.Name, r.Rate, r.Throughput, r.P50, r.P99)
	}
	if paced.PublishRate > 2200 {
		t.Errorf("paced run published %.0f ev/s, target 2000", paced.PublishRate)
	}
	if progress == 0 {
		t.Error("no progress reported")
	}
	// The worker's conversations end as their appends say.
	c, err := client.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := c.Snapshot(ctx, "t2-7")
		if err == nil && bytes.Count(s.FlatList, []byte(`"role":`)) == 20 { // its 20 appends
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored snapshot of t2-7: %+v, %v", s, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// embeddedServer starts an embedded JetStream server for the test and
// returns a function that opens a connection to it, closed when the test
// ends.
func embeddedServer(t *testing.T) func() *nats.Conn {
	t.Helper()
	ns := workertest.Server(t, natsembed.Config{})
	return func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}
