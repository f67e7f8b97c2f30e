package worker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestEncodeSnapshotMatchesMarshal: the hand-assembled snapshot is, value for
// value what json.Marshal gives, on every shape of the corpus.
func TestEncodeSnapshotMatchesMarshal(t *testing.T) {
	cases := append(natstest.LoadCorpus(t, "reference-suite.jsonl.gz", 60), natstest.LoadCorpus(t, "generated-noise.jsonl.gz", 40)...)
	empty := natstest.CorpusCase{}
	for _, cc := range append(cases, empty) {
		res, err := conversation.Parse(cc.Msgs, cc.Groups)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeSnapshot("c-1_x", 7, 42, res)
		if err != nil {
			t.Fatal(err)
		}
		flat, _ := json.Marshal(res.FlatList)
		tree, _ := json.Marshal(res.ContextTree)
		if string(flat) == "null" {
			flat = []byte("[]")
		}
		if string(tree) == "null" {
			tree = []byte("[]")
		}
		want, err := json.Marshal(streams.Snapshot{Format: streams.SnapshotFormat, ConversationID: "c-1_x", Version: 7, Sequence: 42, FlatList: flat, ContextTree: tree})
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v\n%.300s", cc.Name, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(w, g); d != "" {
			t.Fatalf("%s: %s", cc.Name, d)
		}
	}
}

// BenchmarkEncodeSnapshot measures what a snapshot store spends encoding,
// with the flat list's JSON at hand as the worker keeps it.
func BenchmarkEncodeSnapshot(b *testing.B) {
	for _, name := range []string{"conversation-1716", "deep-26085", "flat-10000"} {
		b.Run(name, func(b *testing.B) {
			var msgs []*conversation.Message
			for _, raw := range benchMessages(b, name) {
				m, err := conversation.NewMessageJSON(raw)
				if err != nil {
					b.Fatal(err)
				}
				msgs = append(msgs, m)
			}
			res, err := conversation.Parse(msgs, nil)
			if err != nil {
				b.Fatal(err)
			}
			flat := make([][]byte, len(res.FlatList))
			for i, m := range res.FlatList {
				if flat[i], err = messageJSON(m); err != nil {
					b.Fatal(err)
				}
			}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = encodeSnapshotOf(buf[:0], "c-1", 7, 42, slices.Values(flat), res.ContextTree); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.ContextTree)), "tree-nodes")
		})
	}
}
