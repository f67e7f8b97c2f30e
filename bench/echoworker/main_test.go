package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEchoAnswersEachEvent: event k of a conversation is answered with a
// delta of length k on its snapshots subject and acknowledged, at once or
// after --ack-after; with --decode too, even when the event does not
// decode.
func TestEchoAnswersEachEvent(t *testing.T) {
	for _, tc := range []struct {
		after  time.Duration
		decode bool
	}{{0, false}, {50 * time.Millisecond, false}, {0, true}} {
		after := tc.after
		t.Run(fmt.Sprintf("after=%s,decode=%t", after, tc.decode), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			urls := make(chan string, 1)
			done := make(chan error, 1)
			cfg := config{listen: "127.0.0.1:-1", dataDir: t.TempDir(), prefix: "convstream", deltaBytes: 8, ackAfter: after, decode: tc.decode}
			go func() {
				done <- run(ctx, cfg, slog.New(slog.DiscardHandler), func(url string) { urls <- url })
			}()
			var url string
			select {
			case url = <-urls:
			case err := <-done:
				t.Fatalf("run: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("not ready")
			}
			nc, err := nats.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			sub, err := nc.SubscribeSync("convstream.snapshots.c-1")
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil { // subscribed before the first event
				t.Fatal(err)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k <= 3; k++ {
				if k == 3 {
					time.Sleep(after) // the first two acks are due when the third event comes
				}
				if _, err := js.Publish(ctx, "convstream.events.c-1", []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
				m, err := sub.NextMsg(30 * time.Second)
				if err != nil {
					t.Fatalf("delta %d: %v", k, err)
				}
				if want := `"length":` + string(rune('0'+k)) + `,`; !strings.Contains(string(m.Data), want) {
					t.Fatalf("delta %d = %s, want %s", k, m.Data, want)
				}
			}
			cons, err := js.Consumer(ctx, "CONVSTREAM_EVENTS", "echoworker")
			if err != nil {
				t.Fatal(err)
			}
			wantPending := 0
			if after > 0 {
				wantPending = 1 // the third, not yet due
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				info, err := cons.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if info.NumAckPending == wantPending {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d events awaiting acks, want %d", info.NumAckPending, wantPending)
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return")
			}
		})
	}
}

// TestLiveHeap: --heap-mib holds that many MiB in 64-byte objects.
func TestLiveHeap(t *testing.T) {
	if got := unsafe.Sizeof(heapNode{}); got != 64 {
		t.Fatalf("a node is %d bytes, want 64", got)
	}
	n := 0
	for h := liveHeap(1); h != nil; h = h.next {
		n++
	}
	if n != 1<<20/64 {
		t.Fatalf("1 MiB holds %d nodes, want %d", n, 1<<20/64)
	}
	if liveHeap(0) != nil {
		t.Fatal("0 MiB holds nodes")
	}
}
