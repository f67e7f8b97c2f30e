package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// BenchmarkErase erases a conversation of 1,000 appends (about 200 bytes
// of content each) stored on one server: an op is one erasure, from the
// request to the receipt; events/s is how many stored events it erases a
// second.
func BenchmarkErase(b *testing.B) {
	const events = 1000
	ns := natstest.StartServer(b, "")
	nc := natstest.Connect(b, ns)
	StartWorker(b, nc)
	c := natstest.NewClient(b, nc)
	ctx := context.Background()
	content := fmt.Sprintf("%0200d", 7)
	var erased time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		conv := fmt.Sprintf("bench-%d", i)
		var last uint64
		parent := any(nil)
		for j := range events {
			id := fmt.Sprintf("m%d", j)
			sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": id, "role": "user", "content": content, "parentId": parent, "createdAt": j})
			if err != nil {
				b.Fatal(err)
			}
			last, parent = sent.Sequence, id
		}
		natstest.WaitVersion(b, c, conv, last, 60*time.Second)
		b.StartTimer()
		start := time.Now()
		r, err := c.Erase(ctx, conv, "BenchmarkErase")
		if err != nil {
			b.Fatal(err)
		}
		erased += time.Since(start)
		if r.Erased.Events != events {
			b.Fatalf("erased %+v, want %d events", r.Erased, events)
		}
	}
	b.ReportMetric(float64(b.N*events)/erased.Seconds(), "events/s")
}
