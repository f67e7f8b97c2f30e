package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// cpuTime is the process's user and system CPU time so far: the worker,
// the embedded server and the publisher, all in this process.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wireBytes counts the bytes of the messages on a subject: subject,
// headers and data.
type wireBytes struct {
	mu    sync.Mutex
	bytes int
	msgs  int
}

func countWire(b *testing.B, nc *nats.Conn, subject string) *wireBytes {
	w := &wireBytes{}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		n := len(m.Subject) + len(m.Data)
		for k, vs := range m.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		w.mu.Lock()
		w.bytes += n
		w.msgs++
		w.mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	return w
}

// BenchmarkLiveReply writes replies of 4,000 tokens in 1,000 chunks, one
// at a time, the two ways side by side: way=chunks (a chunk event each,
// append deltas) and way=updates (a message.updated carrying the whole
// text so far each, as before chunks). It reports the process's CPU time
// per chunk (worker, embedded server and publisher together) and the
// bytes of snapshot deltas on the wire per chunk, with the chunk's text
// size for comparison.
func BenchmarkLiveReply(b *testing.B) {
	const chunks = 1000
	for _, run := range []struct {
		way    string
		worker bool
	}{{"chunks", true}, {"updates", true}, {"chunks", false}, {"updates", false}} {
		way := run.way
		b.Run(fmt.Sprintf("way=%s/worker=%t", way, run.worker), func(b *testing.B) {
			ns := natstest.StartServer(b, "")
			nc := natstest.Connect(b, ns)
			if run.worker {
				StartWorker(b, nc)
			} else {
				// The same publishes and stores without a worker: the
				// CPU time to subtract for the worker's own.
				provisionedWorker(b, nc)
			}
			c := natstest.NewClient(b, nc)
			js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
			if err != nil {
				b.Fatal(err)
			}
			wire := countWire(b, nc, "convstream.snapshots.>")
			textBytes := 0
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				conv := fmt.Sprintf("%s-%d", way, i)
				if run.worker {
					liveConvB(b, c, conv, way == "chunks")
				}
				var text strings.Builder
				for k := 1; k <= chunks; k++ {
					t := chunkText(k)
					text.WriteString(t)
					textBytes += len(t)
					var typ, subject string
					var data any
					if way == "chunks" {
						typ, subject, data = streams.TypeMessageChunk, c.Subjects().Chunks(conv), streams.MessageChunk{ID: "a1", Seq: uint64(k), Text: t}
					} else {
						typ, subject, data = streams.TypeMessageUpdated, c.Subjects().Events(conv), map[string]any{"id": "a1", "content": text.String()}
					}
					ev, err := streams.NewEventAs(fmt.Sprintf("%s-%d", conv, k), typ, "urn:bench", conv, streams.ContentTypeJSON, data)
					if err != nil {
						b.Fatal(err)
					}
					msg, err := streams.EncodeEvent(subject, ev, streams.Structured)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := js.PublishMsgAsync(msg); err != nil {
						b.Fatal(err)
					}
				}
				<-js.PublishAsyncComplete()
				if run.worker {
					natstest.WaitVersion(b, c, conv, lastStoredSeq(b, c, conv), 120*time.Second)
				}
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			n := float64(b.N * chunks)
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/chunk")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/chunk")
			if !run.worker {
				b.ReportMetric(0, "ns/op")
				return
			}
			natstest.WaitFor(b, 30*time.Second, "the deltas", func() bool { wire.mu.Lock(); defer wire.mu.Unlock(); return wire.msgs >= b.N*(chunks+2) })
			wire.mu.Lock()
			b.ReportMetric(float64(wire.bytes)/float64(wire.msgs), "wire-B/delta")
			b.ReportMetric(float64(textBytes)/n, "text-B/chunk")
			wire.mu.Unlock()
			b.ReportMetric(0, "ns/op")
		})
	}
}

// liveConvB is liveConv for a benchmark: with reply false the placeholder
// is an ordinary message, as before chunks.
func liveConvB(b *testing.B, c *client.Client, conv string, reply bool) {
	b.Helper()
	a1 := map[string]any{"id": "a1", "role": "assistant", "parentId": "u1", "content": ""}
	if reply {
		a1[streams.FieldStreamStatus] = streams.StreamStreaming
	}
	for _, m := range []map[string]any{{"id": "u1", "role": "user", "content": "a long story", "parentId": nil}, a1} {
		if _, err := c.Send(context.Background(), conv, streams.TypeMessageAppended, m); err != nil {
			b.Fatal(err)
		}
	}
}

// lastStoredSeq is the sequence of the last thing the events stream holds
// of conv (events or chunks).
func lastStoredSeq(b *testing.B, c *client.Client, conv string) uint64 {
	b.Helper()
	st, err := c.JetStream().Stream(context.Background(), "CONVSTREAM_EVENTS")
	if err != nil {
		b.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), "convstream.*."+conv)
	if err != nil {
		b.Fatal(err)
	}
	return m.Sequence
}

// BenchmarkLiveLatency streams 200 replies at once, each at 30 chunks a
// second for 5 seconds, and reports the chunk-to-screen latency (from the
// chunk's publish to its append delta's arrival at a subscriber) at p50
// and p99.
func BenchmarkLiveLatency(b *testing.B) {
	const replies, rate, seconds = 200, 30, 5
	ns := natstest.StartServer(b, "")
	nc := natstest.Connect(b, ns)
	StartWorker(b, nc)
	c := natstest.NewClient(b, nc)
	screen := natstest.Connect(b, ns)
	var mu sync.Mutex
	var lat []time.Duration
	sub, err := screen.Subscribe("convstream.snapshots.>", func(m *nats.Msg) {
		now := time.Now()
		var ev struct {
			Data streams.SnapshotDelta `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) != nil || len(ev.Data.Append) == 0 {
			return
		}
		t := strings.TrimSpace(ev.Data.Append[0].Text)
		sent, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return
		}
		mu.Lock()
		lat = append(lat, now.Sub(time.Unix(0, sent)))
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := screen.Flush(); err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for r := 0; r < replies; r++ {
			conv := fmt.Sprintf("lat-%d-%d", i, r)
			liveConvB(b, c, conv, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.NewTicker(time.Second / rate)
				defer t.Stop()
				for k := 1; k <= rate*seconds; k++ {
					<-t.C
					text := strconv.FormatInt(time.Now().UnixNano(), 10) + " "
					ev, err := streams.NewEventAs(fmt.Sprintf("%s-%d", conv, k), streams.TypeMessageChunk, "urn:bench", conv, streams.ContentTypeJSON,
						streams.MessageChunk{ID: "a1", Seq: uint64(k), Text: text})
					if err != nil {
						panic(err)
					}
					msg, err := streams.EncodeEvent(c.Subjects().Chunks(conv), ev, streams.Structured)
					if err != nil {
						panic(err)
					}
					if _, err := js.PublishMsgAsync(msg); err != nil {
						panic(err)
					}
				}
			}()
		}
		wg.Wait()
		<-js.PublishAsyncComplete()
	}
	b.StopTimer()
	want := b.N * replies * rate * seconds
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(lat)
		mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no deltas")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lat))/float64(want), "seen")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLiveApply is the worker's own work for one chunk of a reply
// already 4,000 tokens long, without NATS: decode the event, check it,
// apply it, and encode the delta. way=chunks applies a chunk event and
// encodes its append delta; way=updates applies a message.updated with the
// whole text so far and encodes the delta of the changed entry, as before
// chunks. (The snapshot store, coalesced to one write per interval, is
// left out of both.)
func BenchmarkLiveApply(b *testing.B) {
	var text strings.Builder
	for k := 1; k <= 1000; k++ {
		text.WriteString(chunkText(k))
	}
	full := text.String()
	for _, way := range []string{"chunks", "updates"} {
		b.Run("way="+way, func(b *testing.B) {
			conv, live := conversation.NewConversation(), liveReplies(nil)
			for _, m := range []map[string]any{
				{"id": "u1", "role": "user", "content": "a long story", "parentId": nil},
				{"id": "a1", "role": "assistant", "parentId": "u1", "content": full, streams.FieldStreamStatus: streams.StreamStreaming},
			} {
				if err := applyEvent(conv, &live, streams.TypeMessageAppended, m, nil); err != nil {
					b.Fatal(err)
				}
			}
			flat, err := conv.FlatList()
			if err != nil {
				b.Fatal(err)
			}
			// Two events, alternated, so that every update changes the
			// message.
			var msgs [2]*nats.Msg
			for i := range msgs {
				var typ, subject string
				var data any
				if way == "chunks" {
					typ, subject, data = streams.TypeMessageChunk, "convstream.chunks.bench", map[string]any{"id": "a1", "seq": 1, "text": chunkText(1000 + i)}
				} else {
					typ, subject, data = streams.TypeMessageUpdated, "convstream.events.bench", map[string]any{"id": "a1", "content": full + chunkText(1000+i)}
				}
				ev, err := streams.NewEventAs(fmt.Sprintf("e%d", i), typ, "urn:bench", "bench", streams.ContentTypeJSON, data)
				if err != nil {
					b.Fatal(err)
				}
				if msgs[i], err = streams.EncodeEvent(subject, ev, streams.Structured); err != nil {
					b.Fatal(err)
				}
			}
			var buf []byte
			r := &liveReply{entry: -1}
			wire := 0
			for i := 0; b.Loop(); i++ {
				m := msgs[i%2]
				ev, err := streams.DecodeEvent(m.Header, m.Data)
				if err != nil {
					b.Fatal(err)
				}
				data, _, rej := streams.CheckEvent(ev, "bench")
				if rej != nil {
					b.Fatal(rej)
				}
				if way == "chunks" {
					live["a1"].seq = 0 // each chunk is seq 1
					if err := applyChunk(conv, live, data); err != nil {
						b.Fatal(err)
					}
					if len(live["a1"].content) > 1<<20 {
						live["a1"].content = live["a1"].content[:0]
					}
					idx := liveEntry(flat, "a1", r)
					buf = encodeAppendDelta(buf[:0], uint64(i+2), uint64(i+1), len(flat),
						[]streams.TextAppend{{Index: idx, ID: "a1", Field: streams.AppendContent, Text: data["text"].(string)}})
				} else {
					if err := applyEvent(conv, &live, ev.Type(), data, nil); err != nil {
						b.Fatal(err)
					}
					cur, err := conv.FlatList()
					if err != nil {
						b.Fatal(err)
					}
					d, err := diffFlat(flat, cur)
					if err != nil {
						b.Fatal(err)
					}
					flat = cur
					buf = encodeDelta(buf[:0], "bench", uint64(i+2), uint64(i+1), uint64(i+2), len(cur), d)
				}
				wire += len(buf)
			}
			b.ReportMetric(float64(wire)/float64(b.N), "delta-data-B")
		})
	}
}
