package read

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestDirectGetHedgesAFrozenReplica reads through a queue group of two
// members standing for a stream's replicas: one relays each direct get to
// the real stream, which answers the reader, and one never answers, as a
// replica on a frozen server does until its routes are found dead. Once
// a read went unanswered, a read is asked a second time after
// replicaHedgeAfter, so it fails only when both of its requests went to
// the silent member: the failures are at most half the requests the
// silent member took, and the first. Without the second request, each of
// them was a failed read, after replicaQuietTimeout.
func TestDirectGetHedgesAFrozenReplica(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	s, err := streams.NewSubjects("relay")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The real stream, under another name than the reader's: the relay
	// forwards the reader's direct gets to it.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REAL", Subjects: []string{s.AllEvents()},
		AllowDirect: true, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := js.Publish(ctx, s.Events("c"), fmt.Appendf(nil, `{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	members := natstest.Connect(t, ns)
	var relayed, silent atomic.Int64
	for _, member := range []func(*nats.Msg){
		func(m *nats.Msg) {
			relayed.Add(1)
			_ = members.PublishRequest("$JS.API.DIRECT.GET.REAL", m.Reply, m.Data)
		},
		func(*nats.Msg) { silent.Add(1) },
	} {
		if _, err := members.QueueSubscribe("$JS.API.DIRECT.GET."+s.EventsStream(), "replicas", member); err != nil {
			t.Fatal(err)
		}
	}
	if err := members.Flush(); err != nil {
		t.Fatal(err)
	}
	r := New(ctx, Config{Conn: nc, Subjects: s, Bucket: bucket(t, nc, 1), ConfirmedFrom: confirmedFrom})

	for _, read := range []struct {
		name string
		read func() error
	}{
		{"one message", func() error {
			m, err := r.DirectFirstEvent(ctx, "c")
			if err == nil && (m == nil || string(m.Data) != `{"n":0}`) {
				err = fmt.Errorf("read %v first", m)
			}
			return err
		}},
		{"a batch", func() error {
			var n int
			err := r.EventBatch(ctx, "c", 1, 10, 1<<20, func(*jetstream.RawStreamMsg, uint64) bool { n++; return true })
			if err == nil && n != 3 {
				err = fmt.Errorf("read %d events of 3", n)
			}
			return err
		}},
	} {
		t.Run(read.name, func(t *testing.T) {
			relayed.Store(0)
			silent.Store(0)
			var reads, failures int
			for silent.Load() < 8 && reads < 400 {
				reads++
				if err := read.read(); err != nil {
					failures++
					t.Logf("read %d: %v", reads, err)
				}
			}
			t.Logf("%d reads: %d requests relayed, %d to the silent member, %d reads failed", reads, relayed.Load(), silent.Load(), failures)
			if silent.Load() < 8 {
				t.Fatalf("the silent member took %d requests of %d reads", silent.Load(), reads)
			}
			if int64(failures)*2 > silent.Load()+1 {
				t.Errorf("%d reads failed of %d requests to the silent member: a request to it was not asked again", failures, silent.Load())
			}
		})
	}
}
