package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestCompactionCommand: `convctl compaction` prints off for an events
// stream a release without compaction made; --enable turns it on from
// now (workers purge a CompactionSettle later), and again leaves it as
// it is.
func TestCompactionCommand(t *testing.T) {
	ns := natstest.StartServer(t, "")
	t.Setenv("CONVSTREAM_NATS_URL", ns.ClientURL())
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := streams.NewSubjects("")
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: s.EventsStream(), Subjects: []string{s.AllEvents(), s.AllChunks()}, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}
	status := func(args ...string) compactionStatus {
		t.Helper()
		code, out, errOut := convctl(t, "", append([]string{"compaction"}, args...)...)
		var st compactionStatus
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("convctl compaction %v: %d %s %s", args, code, out, errOut)
		}
		return st
	}
	if st := status(); st.On || st.Stream != s.EventsStream() {
		t.Errorf("an earlier release's stream: %+v, want off", st)
	}
	before := time.Now().Add(-time.Second)
	on := status("--enable")
	if !on.On || on.Since.Before(before) || !on.PurgesFrom.Equal(on.Since.Add(worker.CompactionSettle)) {
		t.Errorf("enabled: %+v", on)
	}
	if st := status("--enable"); st != on {
		t.Errorf("enabled again: %+v, want %+v", st, on)
	}
	if st := status(); st != on {
		t.Errorf("read after: %+v, want %+v", st, on)
	}
}
