package streams

import (
	"encoding/json"
	"testing"
)

// TestViewAppliesLeanAppend: a chunk's delta as the worker publishes it
// (version, baseVersion, length and append only), filled by FillAppend,
// applies to its base version only and moves the view's sequence to its
// version; an ordinary delta is left as it is.
func TestViewAppliesLeanAppend(t *testing.T) {
	v := &View{ConversationID: "c", Version: 7, Sequence: 8, FlatList: []json.RawMessage{
		json.RawMessage(`{"id":"u1","role":"user","content":"hi"}`),
		json.RawMessage(`{"id":"a1","role":"assistant","content":"Hel","streamStatus":"streaming"}`),
	}}
	var d SnapshotDelta
	if err := json.Unmarshal([]byte(`{"version":9,"baseVersion":7,"length":2,"append":[{"i":1,"id":"a1","f":"content","t":"lo"}]}`), &d); err != nil {
		t.Fatal(err)
	}
	d.FillAppend("c")
	if d.ConversationID != "c" || d.Sequence != 9 || d.From != 2 {
		t.Fatalf("filled %+v", d)
	}
	stale := *v
	stale.Version = 6
	if stale.Apply(&d) {
		t.Error("a chunk's delta applied to another base")
	}
	if !v.Apply(&d) {
		t.Fatal("not applied to its base")
	}
	var m map[string]any
	if err := json.Unmarshal(v.FlatList[1], &m); err != nil || m["content"] != "Hello" {
		t.Fatalf("entry %s (%v)", v.FlatList[1], err)
	}
	if v.Version != 9 || v.Sequence != 9 {
		t.Errorf("version %d sequence %d, want 9 and 9", v.Version, v.Sequence)
	}
	full := SnapshotDelta{ConversationID: "c", Version: 10, BaseVersion: 9, Sequence: 12, From: 2, Length: 2, FlatList: []json.RawMessage{}}
	full.FillAppend("other")
	if full.ConversationID != "c" || full.Sequence != 12 {
		t.Errorf("an ordinary delta changed: %+v", full)
	}
}
