package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// liveConv appends a user message and a streaming reply to it.
func liveConv(t *testing.T, c *client.Client, conv string) (user, reply map[string]any) {
	t.Helper()
	ctx := context.Background()
	user = map[string]any{"id": "u1", "role": "user", "content": "write a long story", "parentId": nil, "createdAt": 1}
	reply = map[string]any{"id": "a1", "role": "assistant", "parentId": "u1", "createdAt": 2}
	if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, user); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartReply(ctx, conv, reply); err != nil {
		t.Fatal(err)
	}
	reply["content"], reply[streams.FieldStreamStatus] = "", streams.StreamStreaming
	return user, reply
}

// chunkText is the text of chunk i: four tokens.
func chunkText(i int) string { return fmt.Sprintf("w%d x%d y%d z%d ", i, i, i, i) }

// screen follows a conversation and records the texts message id showed.
type screen struct {
	mu     sync.Mutex
	texts  []string
	status string
	cancel context.CancelFunc
	done   chan struct{}
}

func watchScreen(t *testing.T, c *client.Client, conv, id string) *screen {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	views, err := c.Follow(ctx, conv, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := &screen{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for v := range views {
			for _, raw := range v.FlatList {
				var m struct {
					ID           string `json:"id"`
					Content      string `json:"content"`
					StreamStatus string `json:"streamStatus"`
				}
				if json.Unmarshal(raw, &m) == nil && m.ID == id {
					s.mu.Lock()
					s.texts = append(s.texts, m.Content)
					s.status = m.StreamStatus
					s.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func (s *screen) last() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.texts) == 0 {
		return "", s.status
	}
	return s.texts[len(s.texts)-1], s.status
}

// checkGrowth requires every text the screen showed to extend the one
// before and to begin the final text: no gap (a text that skips what the
// final has) and no duplicate (a text the final does not begin with).
func (s *screen) checkGrowth(t *testing.T, name, final string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := ""
	for i, txt := range s.texts {
		if !strings.HasPrefix(final, txt) {
			t.Fatalf("%s: text %d (%d bytes) does not begin the final text: %.80q…", name, i, len(txt), txt[max(0, len(txt)-80):])
		}
		if !strings.HasPrefix(txt, prev) {
			t.Fatalf("%s: text %d shrank from %d to %d bytes", name, i, len(prev), len(txt))
		}
		prev = txt
	}
	if prev != final {
		t.Fatalf("%s: last text %d bytes, want the final %d", name, len(prev), len(final))
	}
}

// TestLiveReplyStreams streams a 4,000-token reply in 1,000 chunks: every
// screen (one from the start, one that joined at chunk 500, one that
// reconnected at chunk 700) sees the text grow with no gap or duplicate and
// ends on the final text; the conversation equals Parse of its final
// messages; the chunks are purged, and the events stream holds at most
// twice the final message's JSON for the reply.
func TestLiveReplyStreams(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	const conv = "live-1"
	user, reply := liveConv(t, c, conv)
	natstest.WaitFor(t, 30*time.Second, "the placeholder", func() bool {
		s, err := c.Snapshot(ctx, conv)
		return err == nil && strings.Contains(string(s.FlatList), `"streamStatus":"streaming"`)
	})

	first := watchScreen(t, c, conv, "a1")
	reconnecting := watchScreen(t, c, conv, "a1")
	var joined, reconnected *screen
	var text strings.Builder
	for i := 1; i <= 1000; i++ {
		switch i {
		case 500:
			joined = watchScreen(t, c, conv, "a1")
		case 600:
			reconnecting.cancel()
		case 700:
			reconnected = watchScreen(t, c, conv, "a1")
		}
		text.WriteString(chunkText(i))
		if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
			t.Fatal(err)
		}
	}
	final := text.String()
	// The screens show the whole text before the completion.
	for name, s := range map[string]*screen{"first": first, "joined": joined, "reconnected": reconnected} {
		natstest.WaitFor(t, 60*time.Second, name+" screen's text", func() bool { txt, _ := s.last(); return txt == final })
	}
	done := streams.MessageCompleted{ID: "a1", Status: streams.StreamDone, Content: final, Model: "builtin", Provider: "convstream",
		Usage: map[string]any{"totalOutputTokens": 4000}, FinishReason: "stop"}
	sent, err := c.Complete(ctx, conv, done)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*screen{"first": first, "joined": joined, "reconnected": reconnected} {
		natstest.WaitFor(t, 60*time.Second, name+" screen's done", func() bool { _, st := s.last(); return st == streams.StreamDone })
		s.checkGrowth(t, name, final)
	}

	// The conversation equals Parse of its final messages.
	for k, v := range done.Patch() {
		reply[k] = v
	}
	want := conversation.NewConversation()
	for _, m := range []map[string]any{user, reply} {
		msg, err := conversation.NewMessage(natstest.Decoded(t, m).(map[string]any))
		if err != nil {
			t.Fatal(err)
		}
		if err := want.Append(msg); err != nil {
			t.Fatal(err)
		}
	}
	snap := natstest.WaitVersion(t, c, conv, sent.Sequence, 30*time.Second)
	res, err := want.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, res); d != "" {
		t.Fatal(d)
	}

	// The chunks are purged; the reply's events hold at most twice the
	// final message's JSON.
	st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the chunks' purge", func() bool {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.Subjects().Chunks(conv)))
		return err == nil && info.State.Subjects[c.Subjects().Chunks(conv)] == 0
	})
	replyBytes := 0
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // purged
		}
		if strings.Contains(string(m.Data), `"a1"`) {
			replyBytes += len(m.Data) + len(m.Subject)
			for k, vs := range m.Header {
				for _, v := range vs {
					replyBytes += len(k) + len(v) + 4
				}
			}
		}
	}
	finalJSON, _ := json.Marshal(reply)
	t.Logf("final message %d bytes; the reply's events %d bytes (%.2fx)", len(finalJSON), replyBytes, float64(replyBytes)/float64(len(finalJSON)))
	if replyBytes > 2*len(finalJSON) {
		t.Fatalf("the events stream holds %d bytes for a reply of %d", replyBytes, len(finalJSON))
	}
}

// liveRejections returns the codes of the rejections published for conv.
func liveRejections(t *testing.T, r *natstest.Recorder) []streams.RejectCode {
	var codes []streams.RejectCode
	for _, e := range r.All() {
		if e.Event != nil && e.Event.Type() == streams.TypeEventRejected {
			var rej streams.EventRejected
			if json.Unmarshal(e.Event.Data(), &rej) == nil {
				codes = append(codes, rej.Code)
			}
		}
	}
	return codes
}

// TestLiveReplyRefusals: a chunk out of order, a chunk for a message that
// is not streaming, and a completion of one, are refused with their codes
// and change nothing.
func TestLiveReplyRefusals(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	const conv = "live-2"
	errs := natstest.Record(t, nc, c.Subjects().Errors(conv))
	deltas := natstest.Record(t, nc, c.Subjects().Snapshots(conv))
	liveConv(t, c, conv)
	send := func(ch streams.MessageChunk) {
		if _, err := c.SendChunk(ctx, conv, ch); err != nil {
			t.Fatal(err)
		}
	}
	send(streams.MessageChunk{ID: "a1", Seq: 1, Text: "one "})
	send(streams.MessageChunk{ID: "a1", Seq: 3, Text: "three "})
	send(streams.MessageChunk{ID: "u1", Seq: 1, Text: "into the user's"})
	send(streams.MessageChunk{ID: "a1", Seq: 2, Text: "two"})
	if _, err := c.Complete(ctx, conv, streams.MessageCompleted{ID: "u1", Status: streams.StreamDone, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	// A chunk on the events subject, a message on the chunks subject.
	if _, err := c.Send(ctx, conv, streams.TypeMessageChunk, streams.MessageChunk{ID: "a1", Seq: 3, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	msg, err := c.Message(ctx, c.Subjects().Chunks(conv), streams.TypeMessageAppended, conv, map[string]any{"id": "x1", "role": "user", "content": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "five rejections", func() bool { return len(liveRejections(t, errs)) >= 5 })
	got := fmt.Sprint(liveRejections(t, errs))
	if got != "[chunk_out_of_order not_streaming not_streaming unknown_type unknown_type]" {
		t.Fatalf("rejections %s", got)
	}
	// The chunks are on the chunks subject, which the last event of the
	// events subject (WaitCaughtUp) does not cover: wait for their text.
	var flat string
	natstest.WaitFor(t, 30*time.Second, `the reply's text "one two" stored`, func() bool {
		snap, err := c.Snapshot(ctx, conv)
		if err != nil {
			return false
		}
		flat = string(snap.FlatList)
		return strings.Contains(flat, `"content":"one two"`)
	})
	if !strings.Contains(flat, `"content":"write a long story"`) {
		t.Fatalf("flatList %s", flat)
	}
	// The deltas, the lean append deltas among them, match the contract.
	appends := 0
	for _, e := range deltas.All() {
		if e.Err != nil {
			t.Fatalf("delta: %v", e.Err)
		}
		natstest.CheckEvent(t, e.Event)
		if strings.Contains(string(e.Event.Data()), `"append"`) {
			appends++
		}
	}
	if appends != 2 {
		t.Fatalf("%d append deltas, want 2", appends)
	}
}

// TestLiveReplyIdleInterrupted: a reply that goes without a chunk for the
// idle timeout is completed as interrupted with what was written.
func TestLiveReplyIdleInterrupted(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc, WithReplyIdleTimeout(300*time.Millisecond))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	const conv = "live-3"
	liveConv(t, c, conv)
	for i := 1; i <= 3; i++ {
		if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 30*time.Second, "the interrupted reply", func() bool {
		s, err := c.Snapshot(ctx, conv)
		return err == nil && strings.Contains(string(s.FlatList), `"streamStatus":"interrupted"`) &&
			strings.Contains(string(s.FlatList), `"content":"`+chunkText(1)+chunkText(2)+chunkText(3)+`"`)
	})
}

// TestLiveReplyAcrossRestart: a worker restarted in the middle of a reply
// rebuilds it from the stream (placeholder and chunks) and goes on with
// the next chunk; the final message is the whole text.
func TestLiveReplyAcrossRestart(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	const conv = "live-4"
	errs := natstest.Record(t, nc, c.Subjects().Errors(conv))
	liveConv(t, c, conv)
	var text strings.Builder
	for i := 1; i <= 300; i++ {
		text.WriteString(chunkText(i))
		if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 30*time.Second, "300 chunks stored", func() bool {
		s, err := c.Snapshot(ctx, conv)
		return err == nil && strings.Contains(string(s.FlatList), chunkText(300))
	})
	r.Stop(t)
	StartWorker(t, natstest.Connect(t, ns))
	for i := 301; i <= 600; i++ {
		text.WriteString(chunkText(i))
		if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, 30*time.Second, "600 chunks stored", func() bool {
		s, err := c.Snapshot(ctx, conv)
		return err == nil && strings.Contains(string(s.FlatList), `"content":"`+text.String()+`"`)
	})
	if _, err := c.Complete(ctx, conv, streams.MessageCompleted{ID: "a1", Status: streams.StreamDone, Content: text.String()}); err != nil {
		t.Fatal(err)
	}
	snap := natstest.WaitCaughtUp(t, c, conv, 30*time.Second)
	if !strings.Contains(string(snap.FlatList), `"streamStatus":"done"`) {
		t.Fatalf("flatList %.300s", snap.FlatList)
	}
	if codes := liveRejections(t, errs); len(codes) > 0 {
		t.Fatalf("rejections %v", codes)
	}
}

// TestLiveReplyPartitioned: on a partitioned stream, chunks are stored in
// their conversation's partition (P.chunks.<partition>.<id>), applied in
// order with its events, and purged after the completion.
func TestLiveReplyPartitioned(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	StartWorker(t, nc, WithStorage(Storage{Partitions: 3}))
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	var text strings.Builder
	for _, conv := range []string{"part-1", "part-2", "part-3"} {
		errs := natstest.Record(t, nc, c.Subjects().Errors(conv))
		liveConv(t, c, conv)
		text.Reset()
		for i := 1; i <= 50; i++ {
			text.WriteString(chunkText(i))
			if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
				t.Fatal(err)
			}
		}
		natstest.WaitFor(t, 30*time.Second, conv+" text so far", func() bool {
			s, err := c.Snapshot(ctx, conv)
			return err == nil && strings.Contains(string(s.FlatList), `"content":"`+text.String()+`"`)
		})
		stored := c.Subjects().StoredChunks(conv, 3)
		st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.Subjects().AllChunks()))
		if err != nil || info.State.Subjects[stored] != 50 {
			t.Fatalf("%s: chunks stored %v (want 50 under %s): %v", conv, info.State.Subjects, stored, err)
		}
		if _, err := c.Complete(ctx, conv, streams.MessageCompleted{ID: "a1", Status: streams.StreamDone, Content: text.String()}); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, 30*time.Second, conv+" done", func() bool {
			s, err := c.Snapshot(ctx, conv)
			return err == nil && strings.Contains(string(s.FlatList), `"streamStatus":"done"`)
		})
		natstest.WaitFor(t, 30*time.Second, conv+" chunks purged", func() bool {
			info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.Subjects().AllChunks()))
			return err == nil && info.State.Subjects[stored] == 0
		})
		if codes := liveRejections(t, errs); len(codes) > 0 {
			t.Fatalf("%s: rejections %v", conv, codes)
		}
	}
}

// TestProvisionAddsChunks: an events stream made before chunks (events
// subjects only, the events-only partition transform) gets the chunks
// subjects and the transform that covers them; its events keep their
// stored subjects.
func TestProvisionAddsChunks(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	s := c.Subjects()
	old := Storage{Partitions: 4}.streamConfig(s)
	old.Subjects, old.SubjectTransform = []string{s.AllEvents()}, s.LegacyPartitionTransform(4)
	if _, err := c.JetStream().CreateStream(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "old-1", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	stream, _, err := Provision(ctx, c.JetStream(), s, Storage{Partitions: 4}, natstest.TestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	if !sameTransform(cfg.SubjectTransform, s.PartitionTransform(4)) || len(cfg.Subjects) != 2 {
		t.Fatalf("after Provision: subjects %v, transform %+v", cfg.Subjects, cfg.SubjectTransform)
	}
	if _, err := c.Send(ctx, "old-1", streams.TypeMessageAppended, map[string]any{"id": "m2", "role": "user", "content": "again"}); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(s.AllEvents()))
	if err != nil || info.State.Subjects[s.StoredEvents("old-1", 4)] != 2 {
		t.Fatalf("events of old-1 by subject %v, %v", info.State.Subjects, err)
	}
}
