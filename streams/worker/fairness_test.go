package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/nats-io/nats.go/jetstream"
)

// publishAll publishes an event of type typ with each of datas to conv
// without waiting for each acknowledgement, and returns the sequence of
// the last.
func publishAll(t testing.TB, c *client.Client, conv, typ string, datas []map[string]any) uint64 {
	t.Helper()
	ctx := context.Background()
	futures := make([]jetstream.PubAckFuture, 0, len(datas))
	for i, data := range datas {
		if i%1000 == 999 {
			<-c.JetStream().PublishAsyncComplete() // within the client's bound of pending publishes
		}
		msg, err := c.Message(ctx, c.Subjects().Events(conv), typ, conv, data)
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.JetStream().PublishMsgAsync(msg)
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	select {
	case <-c.JetStream().PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishing: no acknowledgements within a minute")
	}
	var last uint64
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			last = max(last, ack.Sequence)
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	return last
}

// chainOf returns n appends of a chain of messages m0 … m(n-1), each of
// size bytes of content.
func chainOf(n, size int) []map[string]any {
	content := string(make([]byte, 0, size))
	for len(content) < size {
		content += "lorem ipsum "
	}
	datas := make([]map[string]any, n)
	for i := range datas {
		d := map[string]any{"id": fmt.Sprintf("m%d", i), "role": []string{"user", "assistant"}[i%2], "content": content[:size]}
		if i > 0 {
			d["parentId"] = fmt.Sprintf("m%d", i-1)
		}
		datas[i] = d
	}
	return datas
}

// updatesOf returns n updates of the messages of a chain of msgs messages,
// spread over it.
func updatesOf(n, msgs int) []map[string]any {
	datas := make([]map[string]any, n)
	for i := range datas {
		datas[i] = map[string]any{"id": fmt.Sprintf("m%d", (i*7919)%msgs), "content": fmt.Sprintf("edit %d", i)}
	}
	return datas
}

// hotConversation makes conv a conversation of msgs messages, waits for
// it to be stored, then queues updates to it, and returns the sequence of
// the last update: its backlog keeps one lane busy for seconds.
func hotConversation(t testing.TB, c *client.Client, conv string, msgs, updates int) uint64 {
	t.Helper()
	last := publishAll(t, c, conv, streams.TypeMessageAppended, chainOf(msgs, 200))
	natstest.WaitVersion(t, c, conv, last, 2*time.Minute)
	return publishAll(t, c, conv, streams.TypeMessageUpdated, updatesOf(updates, msgs))
}

// converged returns, for each conversation of convs sent one append at
// sent, how long after sent its stored snapshot showed it.
func converged(t testing.TB, c *client.Client, convs []string, seqs []uint64, sent time.Time, timeout time.Duration) []time.Duration {
	t.Helper()
	took := make([]time.Duration, len(convs))
	deadline := time.Now().Add(timeout)
	for i, conv := range convs {
		for {
			s, err := c.Snapshot(context.Background(), conv)
			if err == nil && s.Version >= seqs[i] {
				took[i] = time.Since(sent)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not converged within %v of its event", conv, timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return took
}

// sendOthers sends one append to each of n conversations named after
// prefix and returns their names and sequences.
func sendOthers(t testing.TB, c *client.Client, prefix string, n int) ([]string, []uint64) {
	t.Helper()
	convs, seqs := make([]string, n), make([]uint64, n)
	for i := range convs {
		convs[i] = fmt.Sprintf("%s-%02d", prefix, i)
		sent, err := c.Send(context.Background(), convs[i], streams.TypeMessageAppended,
			map[string]any{"id": "m0", "role": "user", "content": "hello"})
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = sent.Sequence
	}
	return convs, seqs
}

// TestHotConversationDoesNotHoldOthers queues thousands of updates to one
// conversation of thousands of messages, each of which costs its lane a
// walk of the conversation, then sends one event to each of 20 other
// conversations: they must all be stored in a small part of the time the
// hot conversation's backlog takes (with one channel a lane they waited
// for all of it: 7.7 s for 5,000 updates to 10,000 messages), and none of
// the hot conversation's events, held longer than the ack wait, may be
// redelivered (see inProgress).
func TestHotConversationDoesNotHoldOthers(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc)
	c := natstest.NewClient(t, natstest.Connect(t, ns)) // not the worker's connection, as in production
	const msgs, updates = 4_000, 1_500
	hotLast := hotConversation(t, c, "hot", msgs, updates)
	sent := time.Now()
	convs, seqs := sendOthers(t, c, "other", 20)
	took := converged(t, c, convs, seqs, sent, 5*time.Minute)
	slowest := slices.Max(took)
	natstest.WaitVersion(t, c, "hot", hotLast, 5*time.Minute)
	hotDone := time.Since(sent)
	t.Logf("others stored after %v at most; the hot conversation's %d updates done after %v", slowest, updates, hotDone)
	if slowest > hotDone/4 {
		t.Errorf("the others took up to %v, against %v for the hot conversation's backlog", slowest, hotDone)
	}
	checkNoRedeliveries(t, c)
}

// checkNoRedeliveries requires the worker's consumer to have nothing
// pending and to have delivered each event of the stream once (the
// consumer's count of redelivered events forgets those acknowledged).
func checkNoRedeliveries(t testing.TB, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	cons, err := c.JetStream().Consumer(ctx, c.Subjects().EventsStream(), defaultConfig().consumer)
	if err != nil {
		t.Fatal(err)
	}
	var info *jetstream.ConsumerInfo
	natstest.WaitFor(t, 30*time.Second, "every event acknowledged", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	stream, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	// Every event stored, applied or since purged by compaction: the
	// stream's last sequence.
	events := stream.CachedInfo().State.LastSeq
	if sinfo, err := stream.Info(ctx); err == nil {
		events = sinfo.State.LastSeq
	}
	if extra := info.Delivered.Consumer - events; extra != 0 {
		t.Errorf("%d deliveries of %d events: %d redelivered while the worker held them", info.Delivered.Consumer, events, extra)
	}
}
