package conversation

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
)

// BenchmarkMarkLiveConversations measures what the garbage collector's mark
// costs for the conversations a worker keeps: 1,000 of them grown in turn
// to 130 messages of 256-byte content, with 20 messages of the same shape
// made and dropped for each one kept (a worker's decoding leaves garbage
// of these sizes between appends), then the same conversations compacted.
// An op is one full collection; mark-ms is the CPU its mark took, objects
// the live objects after it.
func BenchmarkMarkLiveConversations(b *testing.B) {
	const (
		conversations = 1000
		length        = 130
		garbage       = 20
	)
	content := strings.Repeat("x", 256)
	convs := make([]*Conversation, conversations)
	for i := range convs {
		convs[i] = NewConversation()
	}
	for k := range length {
		for i, conv := range convs {
			f := map[string]any{"id": fmt.Sprintf("c%d-m%d", i, k), "role": []string{"user", "assistant"}[k%2], "content": content, "createdAt": float64(k)}
			if k > 0 {
				f["parentId"] = fmt.Sprintf("c%d-m%d", i, k-1)
			}
			for range garbage {
				if _, err := NewMessage(f); err != nil {
					b.Fatal(err)
				}
			}
			m, err := NewMessage(f)
			if err != nil {
				b.Fatal(err)
			}
			if err := conv.Append(m); err != nil {
				b.Fatal(err)
			}
			if _, err := conv.FlatList(); err != nil {
				b.Fatal(err)
			}
		}
	}
	samples := []metrics.Sample{
		{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/gc/heap/objects:objects"},
	}
	markCPU := func() float64 {
		metrics.Read(samples)
		return samples[0].Value.Float64() + samples[1].Value.Float64() + samples[2].Value.Float64()
	}
	measure := func(b *testing.B) {
		runtime.GC()
		start := markCPU()
		for b.Loop() {
			runtime.GC()
		}
		b.ReportMetric((markCPU()-start)*1000/float64(b.N), "mark-ms/op")
		b.ReportMetric(float64(samples[3].Value.Uint64()), "objects")
	}
	b.Run("live", measure)
	// What a worker's quiet conversations cost once compacted.
	for _, conv := range convs {
		conv.Compact()
	}
	b.Run("compacted", measure)
	runtime.KeepAlive(convs)
}
