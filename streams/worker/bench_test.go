package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkWorkerThroughput publishes 20 conformance conversations (about
// 1,000 events) asynchronously and waits until every snapshot is stored;
// it reports events per second end to end (publish → apply → parse →
// snapshot published and stored), for a warm cache (large) and a cold one
// (2 conversations: nearly every event rebuilds its conversation).
func BenchmarkWorkerThroughput(b *testing.B) {
	cases := natstest.LoadCorpus(b, "generated-normal.jsonl.gz", 20)
	for _, cache := range []int{10_000, 2} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			ns := natstest.StartServer(b, "")
			nc := natstest.Connect(b, ns)
			worker.StartWorker(b, nc, worker.WithCacheConversations(cache))
			c := natstest.NewClient(b, nc)
			js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
			if err != nil {
				b.Fatal(err)
			}
			events := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				counts := map[string]int{}
				// Interleave conversations as live traffic would.
				for j := 0; ; j++ {
					more := false
					for k, cc := range cases {
						if j >= len(cc.Msgs) {
							continue
						}
						more = true
						conv := fmt.Sprintf("b%d-%d", i, k)
						ev, err := streams.NewEvent(fmt.Sprintf("%s-%d", conv, j), streams.TypeMessageAppended, "urn:bench", conv, cc.Msgs[j])
						if err != nil {
							b.Fatal(err)
						}
						msg, err := streams.EncodeEvent("convstream.events."+conv, ev, streams.Structured)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := js.PublishMsgAsync(msg); err != nil {
							b.Fatal(err)
						}
						counts[conv]++
						events++
					}
					if !more {
						break
					}
				}
				<-js.PublishAsyncComplete()
				for conv := range counts {
					natstest.WaitCaughtUp(b, c, conv, 120*time.Second)
				}
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
			_ = context.Background()
		})
	}
}
