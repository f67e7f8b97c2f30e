package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRebuildReadsEveryEventBefore rebuilds a conversation longer than
// several batched reads, its events interleaved with another's, up to
// sequences within it (read one by one: later events are stored), up to its
// last event and past its end (in batches), and all of them again without
// batches (a server older than 2.11); some as for a conversation with no
// stored snapshot, whose first event is read from a replica. An event
// exactly at the size limit must be replayed: a batched read adds headers
// that are not the event's.
func TestRebuildReadsEveryEventBefore(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.TestLogger(t)))

	const n = 2*replayBatch + 90
	seqs := make([]uint64, n) // of conversation "long"'s events
	big := 0                  // the index of the largest
	for i := range n {
		content := "x"
		if i == n/2 {
			content, big = strings.Repeat("y", 4096), i
		}
		msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": content}
		if i > 0 {
			msg["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		sent, err := c.Send(ctx, "long", streams.TypeMessageAppended, msg)
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = sent.Sequence
		if _, err := c.Send(ctx, "other", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("o%d", i), "role": "user"}); err != nil {
			t.Fatal(err)
		}
	}
	// The limit is the largest event's size as stored, headers included.
	stored, err := w.reads.NextEvent(ctx, "long", seqs[big])
	if err != nil {
		t.Fatal(err)
	}
	w.cfg.limits.MaxEventBytes = len(stored.Data) + headerSize(stored.Header)

	for _, batched := range []bool{true, false} { // whether batches may be used
		for _, upTo := range []int{0, 1, replayBatch, replayBatch + 1, n - 1, n} {
			before := seqs[n-1] + 2 // past the end (and past "other"'s last event)
			if upTo < n {
				before = seqs[upTo]
			}
			r := w.newReplay("long", before)
			r.oneByOne = !batched
			// As if no snapshot were stored: the first event comes from a
			// replica, once of two.
			r.unstored = upTo%2 == 1
			if err := r.run(ctx); err != nil {
				t.Fatalf("batched %v, up to %d: %v", batched, upTo, err)
			}
			var last uint64
			if upTo > 0 {
				last = seqs[upTo-1]
			}
			if r.conv.Len() != upTo || r.n != upTo || r.last != last {
				t.Errorf("batched %v, up to %d: %d messages from %d events, last %d; want %d, last %d",
					batched, upTo, r.conv.Len(), r.n, r.last, upTo, last)
			}
			if upTo > big {
				if _, ok := r.conv.Get(fmt.Sprintf("m%d", big)); !ok {
					t.Errorf("batched %v, up to %d: the event at the size limit was not replayed", batched, upTo)
				}
			}
		}
	}
}

// TestRebuildBehindUneven rebuilds, with later events stored, a
// conversation whose events are bunched at both ends of the stream, so
// that the first batch's estimate (see behindBatch) is wrong both ways.
func TestRebuildBehindUneven(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.TestLogger(t)))
	var seqs []uint64
	send := func(conv string, i int) {
		msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user"}
		if i > 0 {
			msg["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, msg)
		if err != nil {
			t.Fatal(err)
		}
		if conv == "bunched" {
			seqs = append(seqs, sent.Sequence)
		}
	}
	for i := range 40 {
		send("bunched", i)
	}
	for i := range 300 {
		send("other", i)
	}
	for i := 40; i < 80; i++ {
		send("bunched", i)
	}
	for _, upTo := range []int{5, 39, 40, 41, 70, 79} {
		r := w.newReplay("bunched", seqs[upTo])
		if err := r.run(ctx); err != nil {
			t.Fatalf("up to %d: %v", upTo, err)
		}
		if r.conv.Len() != upTo || r.last != seqs[upTo-1] {
			t.Errorf("up to %d: %d messages, last %d; want last %d", upTo, r.conv.Len(), r.last, seqs[upTo-1])
		}
	}
}

func TestBehindBatch(t *testing.T) {
	for _, tc := range []struct {
		stored, first, last, before uint64
		want                        int
	}{
		{2, 10, 20, 15, 3},          // the first only, then one to see the end and one to spare
		{1, 10, 10, 11, 3},          // not behind, but answered
		{10, 1, 100, 50, 7},         // 8 between, 48 of 99 before: 3.9 rounds up to 4
		{10, 1, 100, 100, 11},       // all but the last
		{5000, 1, 5000, 4000, 1024}, // capped
	} {
		if got := behindBatch(tc.stored, tc.first, tc.last, tc.before); got != tc.want {
			t.Errorf("behindBatch(%d, %d, %d, %d) = %d, want %d", tc.stored, tc.first, tc.last, tc.before, got, tc.want)
		}
	}
}

// TestDirectFirstEvent reads a conversation's first event from a replica:
// none for a conversation with no event, the first of several otherwise,
// headers as stored.
func TestDirectFirstEvent(t *testing.T) {
	nc := natstest.Connect(t, natstest.StartServer(t, ""))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	w := provisionedWorker(t, nc, WithLogger(natstest.TestLogger(t)))

	if m, err := w.reads.DirectFirstEvent(ctx, "none"); err != nil || m != nil {
		t.Fatalf("a conversation with no event: %v, %v; want nil, nil", m, err)
	}
	var first uint64
	for i := range 3 {
		if _, err := c.Send(ctx, "other", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("o%d", i), "role": "user"}); err != nil {
			t.Fatal(err)
		}
		sent, err := c.Send(ctx, "some", streams.TypeMessageAppended, map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = sent.Sequence
		}
	}
	m, err := w.reads.DirectFirstEvent(ctx, "some")
	if err != nil {
		t.Fatal(err)
	}
	leader, err := w.reads.NextEvent(ctx, "some", 1)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.Sequence != first || m.Subject != leader.Subject || string(m.Data) != string(leader.Data) ||
		m.Header.Get(jetstream.MsgIDHeader) != leader.Header.Get(jetstream.MsgIDHeader) || m.Header.Get(jetstream.SequenceHeader) != "" {
		t.Errorf("first event %+v, want the leader's %+v (sequence %d) without the direct get's headers", m, leader, first)
	}
}
