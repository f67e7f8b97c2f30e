package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestLiveReplyOrphanInterrupted: a reply whose writer went silent while
// no worker holds its conversation (the worker that applied its chunks
// stopped; no event since brings the conversation to another's lane) is
// completed as interrupted, with what was written, by a worker that never
// saw it, once, without a rejection, and its chunks are purged; on an
// unpartitioned stream and on a partitioned one, whose partition has no
// owner since the restart.
func TestLiveReplyOrphanInterrupted(t *testing.T) {
	for _, partitions := range []int{0, 3} {
		t.Run(map[int]string{0: "unpartitioned", 3: "partitioned"}[partitions], func(t *testing.T) {
			ns := natstest.StartServer(t, "")
			nc := natstest.Connect(t, ns)
			storage := WithStorage(Storage{Partitions: partitions})
			// Compaction off: the test counts the conversation's events in
			// the stream, which a checkpoint's purge would leave fewer of.
			first := StartWorker(t, nc, storage, WithEventCompaction(false)) // the default idle timeout: it will not time the reply out
			c := natstest.NewClient(t, nc)
			ctx := context.Background()
			const conv = "orphan"
			errs := natstest.Record(t, nc, c.Subjects().Errors(conv))
			liveConv(t, c, conv)
			var text strings.Builder
			for i := 1; i <= 5; i++ {
				text.WriteString(chunkText(i))
				if _, err := c.SendChunk(ctx, conv, streams.MessageChunk{ID: "a1", Seq: uint64(i), Text: chunkText(i)}); err != nil {
					t.Fatal(err)
				}
			}
			natstest.WaitFor(t, 30*time.Second, "the text so far stored", func() bool {
				s, err := c.Snapshot(ctx, conv)
				return err == nil && strings.Contains(string(s.FlatList), `"content":"`+text.String()+`"`)
			})
			first.Stop(t)

			StartWorker(t, natstest.Connect(t, ns), storage, WithEventCompaction(false), WithReplyIdleTimeout(300*time.Millisecond))
			natstest.WaitFor(t, 30*time.Second, "the orphan reply interrupted", func() bool {
				s, err := c.Snapshot(ctx, conv)
				return err == nil && strings.Contains(string(s.FlatList), `"streamStatus":"interrupted"`) &&
					strings.Contains(string(s.FlatList), `"content":"`+text.String()+`"`)
			})
			st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
			if err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, 30*time.Second, "the chunks purged", func() bool {
				info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.Subjects().AllChunks()))
				return err == nil && len(info.State.Subjects) == 0
			})
			// Sweeps after the completion write nothing more.
			time.Sleep(time.Second)
			info, err := st.Info(ctx, jetstream.WithSubjectFilter(c.Subjects().StoredEvents(conv, partitions)))
			if err != nil {
				t.Fatal(err)
			}
			if n := info.State.Msgs; n != 3 {
				t.Errorf("%d events stored, want 3 (user message, placeholder, one completion)", n)
			}
			if codes := liveRejections(t, errs); len(codes) > 0 {
				t.Fatalf("rejections %v", codes)
			}
		})
	}
}
