package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
)

// BenchmarkInferenceFlood measures what a flood of inference requests
// does to live events, on a worker started as main does (default flags:
// --inference-workers half the CPUs, --inference-queue 64,
// --inference-queue-wait 1s). 50 live conversations each send an append,
// wait for its delta and pause 50 ms, for 6 s; in the flood run, 1 s in,
// 4,000 requests go out at once: a quarter each for absent conversations,
// openai.chat with a budget of 10^9 tokens counted with o200k_base,
// anthropic.messages with the same budget, and raw, over 20 conversations
// of 200 messages of 1 KB. Run it with -benchtime 1x; it reports the
// events' round trip (send to delta: events-p50-ms, events-p99-ms), the
// requests refused busy at once and their round trip (busy, busy-p99-ms,
// busy-max-ms), those refused busy when their queue wait ended
// (busy-after-wait), the requests answered otherwise (served,
// served-p99-ms),
// and the growth of the process's peak resident set
// (peak-RSS-growth-MiB). The load generator shares the process. The
// last sub-benchmark runs as many inference workers as CPUs, for
// comparison with the default.
func BenchmarkInferenceFlood(b *testing.B) {
	for _, bc := range []struct {
		name  string
		flood int
		args  []string
	}{
		{"requests-0", 0, nil},
		{"requests-4000", 4000, nil},
		{"requests-4000-workers-cores", 4000, []string{"--inference-workers", strconv.Itoa(runtime.GOMAXPROCS(0))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				runInferenceFlood(b, bc.flood, bc.args...)
			}
		})
	}
}

func runInferenceFlood(b *testing.B, flood int, args ...string) {
	rw := startRun(b, args...)
	ctx := context.Background()
	c := rw.client
	const asked, askedMessages = 20, 200
	for i := range asked {
		conv := fmt.Sprintf("asked-%d", i)
		parent := any(nil)
		for j := range askedMessages {
			id := fmt.Sprintf("m%d", j)
			role := []string{"user", "assistant"}[j%2]
			if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": id, "role": role,
				"content": strings.Repeat(fmt.Sprintf("word%d ", j), 128), "parentId": parent}); err != nil {
				b.Fatal(err)
			}
			parent = id
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s, err := c.Snapshot(ctx, fmt.Sprintf("asked-%d", asked-1))
		if err == nil && strings.Contains(string(s.FlatList), fmt.Sprintf(`"m%d"`, askedMessages-1)) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the asked conversations were not stored")
		}
	}

	resetPeakRSS(b)
	before := procStatusKiB(b, "VmRSS")
	const live, liveFor, pause = 50, 6 * time.Second, 50 * time.Millisecond
	var mu sync.Mutex
	var events []time.Duration
	var wg sync.WaitGroup
	stop := time.Now().Add(liveFor)
	for i := range live {
		conv := fmt.Sprintf("live-%d", i)
		deltas, err := c.Deltas(ctx, conv)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			parent := any(nil)
			for j := 0; time.Now().Before(stop); j++ {
				id := fmt.Sprintf("m%d", j)
				start := time.Now()
				sent, err := c.Send(ctx, conv, streams.TypeMessageAppended, map[string]any{"id": id, "role": "user", "content": "live", "parentId": parent})
				if err != nil {
					b.Error(err)
					return
				}
				parent = id
				for d := range deltas {
					if d.Version >= sent.Sequence {
						break
					}
				}
				mine = append(mine, time.Since(start))
				time.Sleep(pause)
			}
			mu.Lock()
			events = append(events, mine...)
			mu.Unlock()
		}()
	}

	var busy, waited, served []time.Duration
	if flood > 0 {
		time.Sleep(time.Second)
		busy, waited, served = sendFlood(b, rw, flood, asked)
	}
	wg.Wait()
	b.ReportMetric(float64(procStatusKiB(b, "VmHWM")-before)/1024, "peak-RSS-growth-MiB")
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(ms(quantile(events, 0.5)), "events-p50-ms")
	b.ReportMetric(ms(quantile(events, 0.99)), "events-p99-ms")
	if flood > 0 {
		b.ReportMetric(float64(len(busy)), "busy")
		b.ReportMetric(ms(quantile(busy, 0.99)), "busy-p99-ms")
		b.ReportMetric(ms(quantile(busy, 1)), "busy-max-ms")
		b.ReportMetric(float64(len(waited)), "busy-after-wait")
		b.ReportMetric(float64(len(served)), "served")
		b.ReportMetric(ms(quantile(served, 0.99)), "served-p99-ms")
	}
}

// sendFlood publishes n inference requests at once, each with its own
// reply subject, and returns the round trips of those refused busy at
// once (the queue full), of those refused busy when their queue wait
// ended, and of those answered otherwise, once all are answered.
func sendFlood(b *testing.B, rw *runningWorker, n, asked int) (busy, waited, served []time.Duration) {
	ctx := context.Background()
	nc, err := nats.Connect(rw.nats)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	inbox := nats.NewInbox()
	sent := make([]time.Time, n)
	var mu sync.Mutex
	answered := make(chan struct{}, n)
	sub, err := nc.Subscribe(inbox+".*", func(m *nats.Msg) {
		at := time.Now()
		var i int
		if _, err := fmt.Sscanf(m.Subject[len(inbox)+1:], "%d", &i); err != nil {
			b.Error(err)
			return
		}
		mu.Lock()
		switch {
		case m.Header.Get("Nats-Service-Error-Code") != "503":
			served = append(served, at.Sub(sent[i]))
		case strings.Contains(m.Header.Get("Nats-Service-Error"), "--inference-queue-wait"):
			waited = append(waited, at.Sub(sent[i]))
		default:
			busy = append(busy, at.Sub(sent[i]))
		}
		mu.Unlock()
		answered <- struct{}{}
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	budget := map[string]any{"maxTokens": 1e9, "encoding": "o200k_base"}
	msgs := make([]*nats.Msg, n)
	for i := range n {
		conv := fmt.Sprintf("asked-%d", i%asked)
		data := map[string]any{"conversationId": conv}
		switch i % 4 {
		case 0:
			conv = fmt.Sprintf("absent-%d", i)
			data["conversationId"] = conv
		case 1:
			data["format"], data["budget"] = "openai.chat", budget
		case 2:
			data["format"], data["budget"] = "anthropic.messages", budget
		case 3:
			data["format"] = "raw"
		}
		m, err := rw.client.Message(ctx, rw.client.Subjects().Inference(conv), streams.TypeInferenceRequested, conv, data)
		if err != nil {
			b.Fatal(err)
		}
		m.Reply = fmt.Sprintf("%s.%d", inbox, i)
		msgs[i] = m
	}
	for i, m := range msgs {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if err := nc.PublishMsg(m); err != nil {
			b.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		select {
		case <-answered:
		case <-time.After(2 * time.Minute):
			b.Fatalf("%d of %d requests answered", i, n)
		}
	}
	return busy, waited, served
}

// quantile returns the q-quantile of ds (q = 1: the largest), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
