package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// BenchmarkRestart times what a restart costs the conversations a worker
// held: a worker applies convs conversations of events each (interleaved,
// as live traffic stores them) and stops gracefully; then, per iteration, a
// new worker starts and one more event of each conversation is sent and
// applied, each rebuilding its conversation, from its checkpoint or from
// its first event. An iteration is the whole round, stop included.
func BenchmarkRestart(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("convs=200/events=32/checkpoints=%v", on), func(b *testing.B) { benchmarkRestart(b, 200, 32, on) })
	}
}

func benchmarkRestart(b *testing.B, convs, events int, checkpoints bool) {
	nc := natstest.Connect(b, natstest.StartServer(b, ""))
	c := natstest.NewClient(b, nc)
	ctx := context.Background()
	content := strings.Repeat("x", 256)
	next := make([]int, convs)
	last := make([]uint64, convs) // the sequence of each one's last event
	send := func() {
		for k := range convs {
			i := next[k]
			msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": content}
			if i > 0 {
				msg["parentId"] = fmt.Sprintf("m%d", i-1)
			}
			sent, err := c.Send(ctx, fmt.Sprint("rs", k), streams.TypeMessageAppended, msg)
			if err != nil {
				b.Fatal(err)
			}
			next[k]++
			last[k] = sent.Sequence
		}
	}
	applied := func() {
		for k := range convs {
			natstest.WaitVersion(b, c, fmt.Sprint("rs", k), last[k], time.Minute)
		}
	}
	opts := []worker.Option{worker.WithLogger(natstest.FailureLogger(b, 10)), worker.WithCheckpoints(checkpoints)}
	r := worker.StartWorker(b, nc, opts...)
	for range events {
		send()
	}
	applied()
	r.Stop(b)
	b.ResetTimer()
	for range b.N {
		r := worker.StartWorker(b, nc, opts...)
		send()
		applied()
		r.Stop(b)
	}
}
