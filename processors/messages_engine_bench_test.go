package processors_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/convstream/convstream/processors"
)

// BenchmarkMessagesEnginePipeline runs the messages-engine spec over the
// flat list of conversation-1716, to set next to BenchmarkDefaultPipeline:
// the difference is what the added processors cost.
func BenchmarkMessagesEnginePipeline(b *testing.B) {
	msgs := benchFlatList(b)
	spec := processors.MessagesEngineSpec()
	// The stale trim's size gate would skip this conversation; open it so
	// that the trim's passes are timed.
	if err := spec.Configure(processors.NameStaleToolResultTrim, map[string]any{"minTotalToolChars": 0.0}); err != nil {
		b.Fatal(err)
	}
	e, err := processors.Default().Build(spec)
	if err != nil {
		b.Fatal(err)
	}
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
