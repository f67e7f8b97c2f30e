package streams

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// BenchmarkRebuild times the rebuild of one conversation of n stored
// events from the events stream, as a worker does after an eviction, a
// restart or a hand-off: over the in-process connection a worker with its
// embedded server uses, and over TCP (loopback: a cluster's round trips
// cost more). Three other conversations' events are interleaved with its
// own, as live traffic stores them.
func BenchmarkRebuild(b *testing.B) {
	for _, conn := range []string{"inprocess", "tcp"} {
		for _, n := range []int{1, 8, 32, 128, 1024} {
			b.Run(fmt.Sprintf("conn=%s/events=%d", conn, n), func(b *testing.B) { benchmarkRebuild(b, conn, n) })
		}
	}
}

// benchmarkRebuild is one case of BenchmarkRebuild.
func benchmarkRebuild(b *testing.B, conn string, n int) {
	ns := startServer(b, "")
	opts := []nats.Option{nats.InProcessServer(ns)}
	if conn == "tcp" {
		opts = nil
	}
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	r := startWorker(b, nc, WithLogger(failureLogger(b, 10)))
	c := newClient(b, nc)
	ctx := context.Background()
	content := strings.Repeat("x", 256)
	var last uint64
	for i := range n {
		for k := range 4 {
			conv := fmt.Sprintf("rb%d", k)
			msg := map[string]any{"id": fmt.Sprintf("m%d", i), "role": "user", "content": content, "createdAt": i}
			if i > 0 {
				msg["parentId"] = fmt.Sprintf("m%d", i-1)
			}
			sent, err := c.Send(ctx, conv, TypeMessageAppended, msg)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				last = sent.Sequence
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		conv, _, err := r.w.rebuild(ctx, "rb0", last+1)
		if err != nil {
			b.Fatal(err)
		}
		if got := conv.Len(); got != n {
			b.Fatalf("rebuilt %d messages, want %d", got, n)
		}
	}
}
