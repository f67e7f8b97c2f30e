package worker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convstream/convstream/conversation"
)

// BenchmarkSnapshotLimits is what measuring a conversation's snapshot
// costs (its context tree built and encoded), which an event pays about
// once per (limit - size) / allowance events, and every event near a
// limit: a chain of n messages of 250-byte contents, and one whose every
// tenth message is a regenerated reply, each nesting the next branch
// point one level deeper.
func BenchmarkSnapshotLimits(b *testing.B) {
	for _, shape := range []string{"chain", "nested"} {
		for _, n := range []int{100, 10_000} {
			conv := conversation.NewConversation()
			for i := range n {
				data := map[string]any{"id": fmt.Sprintf("m%05d", i), "role": "user", "content": strings.Repeat("x", 250)}
				if i > 0 {
					data["parentId"] = fmt.Sprintf("m%05d", i-1)
				}
				if shape == "nested" && i%10 == 9 { // a sibling of the last: a branch point
					data["parentId"] = fmt.Sprintf("m%05d", i-2)
				}
				m, err := conversation.NewMessage(data)
				if err == nil {
					err = conv.Append(m)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			flat, err := conv.FlatList()
			if err != nil {
				b.Fatal(err)
			}
			d, err := diffFlat(nil, flat)
			if err != nil {
				b.Fatal(err)
			}
			s := &snapshotStore{}
			st := &convState{id: "bench", conv: conv, flatBytes: int32(d.size())}
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				for b.Loop() {
					if err := s.measureSnapshot(st, 1_000_000, int(st.flatBytes), 64<<20, DefaultMaxBranchDepth); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(st.treeBound), "tree-bytes")
				b.ReportMetric(float64(st.flatBytes), "flat-bytes")
			})
		}
	}
}
