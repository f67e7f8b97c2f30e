package streams

import (
	"encoding/json"
	"testing"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
)

// TestEncodeSnapshotMatchesMarshal: the hand-assembled snapshot is, value for
// value what json.Marshal gives, on every shape of the corpus.
func TestEncodeSnapshotMatchesMarshal(t *testing.T) {
	cases := append(loadCorpus(t, "reference-suite.jsonl.gz", 60), loadCorpus(t, "generated-noise.jsonl.gz", 40)...)
	empty := corpusCase{}
	for _, cc := range append(cases, empty) {
		res, err := conversation.Parse(cc.msgs, cc.groups)
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
		want, err := json.Marshal(Snapshot{ConversationID: "c-1_x", Version: 7, Sequence: 42, FlatList: flat, ContextTree: tree})
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
