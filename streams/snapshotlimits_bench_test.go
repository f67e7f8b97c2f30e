package streams

import (
	"fmt"
	"strings"
	"testing"

	"github.com/convstream/convstream/conversation"
)

// BenchmarkSnapshotLimits is what the snapshot limits cost an event: the
// check when the bounds tell (every event but about one in
// (limit - size) / allowance), and a measurement (the context tree built
// and encoded), for a chain of n messages of 300 bytes with a regenerated
// reply every tenth.
func BenchmarkSnapshotLimits(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		conv := conversation.NewConversation()
		for i := range n {
			data := map[string]any{"id": fmt.Sprintf("m%05d", i), "role": "user", "content": strings.Repeat("x", 250)}
			if i > 0 {
				data["parentId"] = fmt.Sprintf("m%05d", i-1)
			}
			if i%10 == 9 { // a sibling: a branch point
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
		w := &Worker{cfg: config{limits: DefaultLimits()}}
		st := &convState{id: "bench", conv: conv, flatBytes: int32(d.size())}
		b.Run(fmt.Sprintf("measure/%d", n), func(b *testing.B) {
			for b.Loop() {
				if err := w.measureSnapshot(st, 1_000_000, int(st.flatBytes), 8<<20, DefaultMaxBranchDepth); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.treeBound), "tree-bytes")
		})
	}
}
