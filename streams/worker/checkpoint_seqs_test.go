package worker

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/natstest"
)

// withDeleteSpacing has compaction delete events by sequence once they
// are n apart on average (deleteSpacing).
func withDeleteSpacing(n uint64) Option { return func(c *config) { c.deleteSpacing = n } }

// TestEventSeqs: a list starts incomplete (its first compaction purges),
// is complete from that checkpoint on with the checkpoint's last event
// kept, hands each later checkpoint the sequences before it, and gives
// itself up past maxEventSeqs until the next checkpoint.
func TestEventSeqs(t *testing.T) {
	var e eventSeqs
	for _, seq := range []uint64{3, 5, 9} {
		e.add(seq)
	}
	if dels := e.before(9); dels != nil {
		t.Fatalf("an incomplete list hands over %v, want nil (a purge)", dels)
	}
	e.checkpointed(7) // a checkpoint at a sequence it does not hold
	if want := []uint64{7, 9}; !e.complete || !slices.Equal(e.seqs, want) {
		t.Fatalf("after a checkpoint at 7: %v complete %v, want %v complete", e.seqs, e.complete, want)
	}
	e.add(12)
	e.add(15)
	if dels, want := e.before(15), []uint64{7, 9, 12}; !slices.Equal(dels, want) {
		t.Fatalf("before(15) = %v, want %v", dels, want)
	}
	e.checkpointed(15)
	if want := []uint64{15}; !slices.Equal(e.seqs, want) || !e.complete {
		t.Fatalf("after a checkpoint at 15: %v complete %v, want %v complete", e.seqs, e.complete, want)
	}
	if dels := e.before(15); dels == nil || len(dels) != 0 {
		t.Fatalf("before(15) of a list starting at 15 = %#v, want empty, not nil (nothing to delete)", dels)
	}
	for seq := uint64(16); seq < 16+maxEventSeqs; seq++ {
		e.add(seq)
	}
	if dels := e.before(16 + maxEventSeqs); dels != nil {
		t.Fatalf("a list past maxEventSeqs hands over %d sequences, want nil (a purge)", len(dels))
	}
	e.checkpointed(16 + maxEventSeqs)
	if e.complete || e.seqs != nil {
		t.Fatalf("after a checkpoint of a list given up: %v complete %v, want empty and incomplete (events went unrecorded)", e.seqs, e.complete)
	}
	e.add(2000)
	e.checkpointed(2000)
	if !e.complete || !slices.Equal(e.seqs, []uint64{2000}) {
		t.Fatalf("after the next checkpoint: %v complete %v, want [2000] complete", e.seqs, e.complete)
	}
}

// TestCompactionDeletesBySequence: once a conversation's first compaction
// has purged its subject, a worker holding it removes what later
// checkpoints cover by deleting each event by sequence, not by purging
// its subject again, when its events are far enough apart in the stream
// (deleteSpacing; 1 here, where 4 conversations interleave). It counts
// the requests on the wire (a client subscribed to the JetStream API
// subjects sees each), and the events stream must still hold only each
// conversation's last event after a graceful stop, every conversation
// equal to Parse. With the default spacing the same load purges.
func TestCompactionDeletesBySequence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spacing uint64
		deletes bool
	}{{"far apart", 1, true}, {"close together", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			testCompactionDeletes(t, tc.spacing, tc.deletes)
		})
	}
}

func testCompactionDeletes(t *testing.T, spacing uint64, deletes bool) {
	load := editLoad{convs: 4, msgs: 5, edits: 200, size: 100}
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	stream := c.Subjects().EventsStream()

	var mu sync.Mutex
	var purges, dels int
	watch := natstest.Connect(t, ns)
	sub, err := watch.Subscribe("$JS.API.STREAM.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch m.Subject {
		case "$JS.API.STREAM.PURGE." + stream:
			var req struct {
				Filter string `json:"filter"`
			}
			if json.Unmarshal(m.Data, &req) == nil && strings.HasPrefix(req.Filter, c.Subjects().Events("")) {
				purges++
			}
		case "$JS.API.STREAM.MSG.DELETE." + stream:
			dels++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return purges, dels
	}

	opts := []Option{WithCacheConversations(load.convs * 2), WithCacheIdle(0), WithSnapshotInterval(200 * time.Millisecond)}
	if spacing > 0 {
		opts = append(opts, withDeleteSpacing(spacing))
	}
	r := StartWorker(t, nc, opts...)
	// The first half: each conversation's first compaction purges.
	last := load.publish(t, c, 0, load.edits/2)
	natstest.CheckStoredAt(t, c, load.want(t, load.edits/2), last, time.Minute)
	natstest.WaitFor(t, time.Minute, "a purge of each conversation's events", func() bool {
		p, _ := counts()
		return p >= load.convs
	})
	// Let purges held back by the floor be made before counting again.
	time.Sleep(2 * time.Second)
	p0, d0 := counts()

	last = load.publish(t, c, load.edits/2, load.edits)
	want := load.want(t, load.edits)
	natstest.CheckStoredAt(t, c, want, last, time.Minute)
	r.Stop(t)
	p1, d1 := counts()
	t.Logf("first half: %d purges of events subjects, %d deletes; second half: %d purges, %d deletes", p0, d0, p1-p0, d1-d0)
	edits := load.convs * load.edits / 2
	switch {
	case deletes && p1 > p0:
		t.Errorf("%d purges of events subjects while the worker held every conversation, want 0 (deletes by sequence)", p1-p0)
	case deletes && d1-d0 < edits/2:
		t.Errorf("%d deletes for %d edits, want about one an edit", d1-d0, edits)
	case !deletes && d1 > 0:
		t.Errorf("%d deletes of events %d apart at most, want purges", d1, load.convs)
	case !deletes && p1 == p0:
		t.Error("no purge in the second half")
	}
	if bytes, msgs := eventsBytes(t, c); msgs != uint64(load.convs) {
		t.Errorf("the events stream holds %d events (%d bytes) after a graceful stop, want each conversation's last (%d)", msgs, bytes, load.convs)
	}
}
