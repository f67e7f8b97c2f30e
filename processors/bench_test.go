package processors_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// benchFlatList parses conversation-1716 and returns its flat list as
// pipeline messages.
func benchFlatList(tb testing.TB) []enginecore.Message {
	tb.Helper()
	msgs, groups := benchInput(tb)
	res, err := conversation.Parse(msgs, groups)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]enginecore.Message, len(res.FlatList))
	for i, m := range res.FlatList {
		out[i] = m.Fields()
	}
	return out
}

// benchAllMessages returns every stored message of conversation-1716, in
// input order, unparsed: a stress input far larger than an active path.
func benchAllMessages(tb testing.TB) []enginecore.Message {
	tb.Helper()
	msgs, _ := benchInput(tb)
	out := make([]enginecore.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Fields()
	}
	return out
}

func benchInput(tb testing.TB) ([]*conversation.Message, []*conversation.MessageGroup) {
	tb.Helper()
	f, err := os.Open("../conversation/testdata/bench/conversation-1716.jsonl.gz")
	if err != nil {
		tb.Skipf("bench input: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		tb.Fatal(err)
	}
	msgs, groups, err := conversation.DecodeInputBytes(doc.Input)
	if err != nil {
		tb.Fatal(err)
	}
	return msgs, groups
}

func defaultEngine(tb testing.TB) *enginecore.Engine {
	tb.Helper()
	e, err := processors.Default().Build(processors.DefaultSpec())
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkDefaultPipeline runs the default spec over the flat list of
// conversation-1716 (parsing is not timed). It also reports the median
// run time, the figure issue 6 sets a budget for.
func BenchmarkDefaultPipeline(b *testing.B) {
	benchPipeline(b, benchFlatList(b))
}

// BenchmarkDefaultPipelineAllMessages runs the default spec over all 1,716
// stored messages of the conversation, as if every one were on the path.
func BenchmarkDefaultPipelineAllMessages(b *testing.B) {
	benchPipeline(b, benchAllMessages(b))
}

func benchPipeline(b *testing.B, msgs []enginecore.Message) {
	benchEngine(b, defaultEngine(b), msgs)
}

// benchEngine times e over msgs and reports the median run (p50-ms) and the
// messages' count.
func benchEngine(b *testing.B, e *enginecore.Engine, msgs []enginecore.Message) {
	ctx := context.Background()
	var runs []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := e.Process(ctx, msgs); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, time.Since(start))
	}
	slices.Sort(runs)
	b.ReportMetric(float64(runs[len(runs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(len(msgs)), "messages")
}

// BenchmarkDefaultPipelineProcessors times each processor of the default
// pipeline over the flat list and over all messages, each processor
// getting its input as the pipeline hands it over.
func BenchmarkDefaultPipelineProcessors(b *testing.B) {
	b.Run("flat", func(b *testing.B) { benchProcessors(b, benchFlatList(b)) })
	b.Run("all", func(b *testing.B) { benchProcessors(b, benchAllMessages(b)) })
}

func benchProcessors(b *testing.B, msgs []enginecore.Message) {
	e := defaultEngine(b)
	ctx := context.Background()
	pc := &enginecore.PipelineContext{Messages: msgs, Metadata: map[string]any{}}
	for _, p := range e.Processors() {
		in := pc
		b.Run(p.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Process(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
		next, err := p.Process(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		pc = next
	}
}

// TestDefaultPipelineOnBenchConversation checks that the default pipeline
// turns the bench conversation into model-ready messages.
func TestDefaultPipelineOnBenchConversation(t *testing.T) {
	msgs := benchFlatList(t)
	res, err := defaultEngine(t).Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[any]bool{"system": true, "user": true, "assistant": true, "tool": true}
	calls := map[any]bool{}
	for i, m := range res.Messages {
		if !allowed[m["role"]] {
			t.Fatalf("message %d has role %v", i, m["role"])
		}
		for _, c := range arrOf(m["tool_calls"]) {
			calls[dig(c, "id")] = true
		}
		if m["role"] == "tool" && !calls[m["tool_call_id"]] {
			t.Fatalf("tool message %d answers no earlier call: %v", i, m["tool_call_id"])
		}
	}
	t.Logf("%d flat-list messages -> %d model messages in %v", len(msgs), len(res.Messages), res.Stats.TotalDuration)
}

func arrOf(v any) []any {
	a, _ := v.([]any)
	return a
}
